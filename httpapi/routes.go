package httpapi

import "github.com/yard-api/yard/pages"

// registerRoutes registers every endpoint of the API. An endpoint is a
// method and a path pattern; a known path with another method answers 405
// with Allow, OPTIONS answers 204 with Allow, and GET also serves HEAD.
func (s *Server) registerRoutes() {
	// Discovery and operations (public but for the metrics).
	s.handle("GET", "/{$}", s.handleIndex)
	s.handle("GET", "/openapi.json", s.handleOpenAPI)
	s.handle("GET", "/docs", s.handleDocs)
	s.handle("GET", "/docs/{asset}", s.handleDocs)
	s.handle("GET", "/problems/{slug}", s.handleProblem)
	s.handle("GET", "/healthz", s.handleHealthz)
	s.handle("GET", "/readyz", s.handleReadyz)
	// Metrics are not public (docs/operations.md, "Metrics and traces"):
	// any principal reads them here, and the loopback --debug-addr
	// listener serves them without credentials.
	s.handle("GET", "/metrics", s.authenticated(s.Metrics().ServeHTTP))

	// People.
	s.handle("POST", "/v1/people", s.adminOnly(s.handleCreatePerson))
	s.handle("GET", "/v1/people", s.adminOnly(s.handleListPeople))
	s.handle("GET", "/v1/people/{person_id}", s.authenticated(loaded(s, s.personFor, s.handleGetPerson)))
	s.handle("PATCH", "/v1/people/{person_id}", s.authenticated(loaded(s, s.personFor, s.handlePatchPerson)))
	s.handle("DELETE", "/v1/people/{person_id}", s.adminOnly(s.handleDeletePerson))

	// Backups of the store (backups.go; docs/api.md, "Backups"):
	// administrators only, never the files' bytes.
	s.handle("POST", "/v1/backups", s.adminOnly(loaded(s, s.backups, s.handleCreateBackup)))
	s.handle("GET", "/v1/backups", s.adminOnly(s.handleListBackups))
	s.handle("GET", "/v1/backups/{name}", s.adminOnly(loaded(s, s.backups, s.handleGetBackup)))

	// Dogs (v1). The dog's identity has the trailing slash; the bare form
	// redirects there with 308 for every method.
	s.handle("POST", "/v1/dogs", s.authenticated(forVersion(dogV1, s.createDog)))
	s.handle("GET", "/v1/dogs", s.authenticated(forVersion(dogV1, s.listDogs)))
	s.handle("", "/v1/dogs/{dog_id}", s.handleDogRedirect)
	s.handle("GET", "/v1/dogs/{dog_id}/{$}", s.authenticated(s.withDog(dogV1, s.getDog)))
	s.handle("PUT", "/v1/dogs/{dog_id}/{$}", s.authenticated(forVersion(dogV1, s.putDog)))
	s.handle("PATCH", "/v1/dogs/{dog_id}/{$}", s.authenticated(s.withDog(dogV1, s.patchDog)))
	s.handle("DELETE", "/v1/dogs/{dog_id}/{$}", s.authenticated(s.withDog(dogV1, s.deleteDog)))

	// Dogs (v2): the same dogs, owner as a link object, schedule instead of
	// barks, and _links.
	s.handle("POST", "/v2/dogs", s.authenticated(forVersion(dogV2, s.createDog)))
	s.handle("GET", "/v2/dogs", s.authenticated(forVersion(dogV2, s.listDogs)))
	s.handle("GET", "/v2/dogs/{dog_id}", s.authenticated(s.withDog(dogV2, s.getDog)))
	s.handle("PUT", "/v2/dogs/{dog_id}", s.authenticated(forVersion(dogV2, s.putDog)))
	s.handle("PATCH", "/v2/dogs/{dog_id}", s.authenticated(s.withDog(dogV2, s.patchDog)))
	s.handle("DELETE", "/v2/dogs/{dog_id}", s.authenticated(s.withDog(dogV2, s.deleteDog)))

	// Authentication endpoints (docs/auth.md). Sign-in endpoints and the
	// JWKS are public; API keys belong to an authenticated principal.
	s.handle("POST", "/sessions", s.handleCreateSession)
	s.handle("GET", "/sessions/{key}", s.handleGetSession)
	s.handle("DELETE", "/sessions/{key}", s.handleDeleteSession)
	s.handle("POST", "/auth/login", s.handleLogin)
	s.handle("POST", "/auth/refresh", s.handleRefresh)
	s.handle("POST", "/auth/logout", s.handleLogout)
	s.handle("POST", "/auth/pk-token", s.handlePKToken)
	s.handle("GET", "/.well-known/jwks.json", loaded(s, s.kit, s.handleJWKS))
	s.handle("POST", "/apikeys", s.authenticated(loaded(s, s.kit, s.handleCreateAPIKey)))
	s.handle("GET", "/apikeys/{apiKey}", s.authenticated(loaded(s, s.kit, s.handleGetAPIKey)))
	s.handle("DELETE", "/apikeys/{apiKey}", s.authenticated(loaded(s, s.kit, s.handleDeleteAPIKey)))
	// Bark actions (docs/barks.md): bark tasks, the single bark, and the
	// bark-schedule view of the schedule (the PATCH of the dog is the other).
	s.handle("POST", "/v1/dogs/{dog_id}/barks", s.authenticated(s.handleBark(true)))
	s.handle("GET", "/v1/dogs/{dog_id}/barks", s.authenticated(s.handleListBarks))
	s.handle("GET", "/v1/dogs/{dog_id}/barks/{bark_id}", s.authenticated(loaded(s, s.loadDogFor, s.handleGetBark)))
	s.handle("DELETE", "/v1/dogs/{dog_id}/barks/{bark_id}", s.authenticated(s.handleDeleteBark))
	s.handle("POST", "/v1/dogs/{dog_id}/bark", s.authenticated(s.handleBark(false)))
	s.handle("GET", "/v1/dogs/{dog_id}/bark", s.authenticated(loaded(s, s.loadDogFor, s.handleLastBark)))
	s.handle("POST", "/v1/dogs/{dog_id}/bark-schedule", s.authenticated(loaded(s, s.loadDogFor, s.handlePostSchedule)))
	s.handle("GET", "/v1/dogs/{dog_id}/bark-schedule", s.authenticated(loaded(s, s.loadDogFor, s.handleGetSchedule)))
	s.handle("DELETE", "/v1/dogs/{dog_id}/bark-schedule", s.authenticated(loaded(s, s.loadDogFor, s.handleDeleteSchedule)))

	// Events (docs/events.md): a stream or pages of the principal's
	// events.
	s.handle("GET", "/v1/events", s.authenticated(loaded(s, s.parseEventQuery, s.handleEvents)))
	// Webhooks (docs/events.md, "Webhooks").
	s.handle("POST", "/v1/webhooks", s.authenticated(s.handleCreateWebhook))
	s.handle("GET", "/v1/webhooks", s.authenticated(s.handleListWebhooks))
	s.handle("GET", "/v1/webhooks/{webhook_id}", s.authenticated(loaded(s, s.loadWebhookFor, s.handleGetWebhook)))
	s.handle("PATCH", "/v1/webhooks/{webhook_id}", s.authenticated(loaded(s, s.loadWebhookFor, s.handlePatchWebhook)))
	s.handle("DELETE", "/v1/webhooks/{webhook_id}", s.authenticated(loaded(s, s.loadWebhookFor, s.handleDeleteWebhook)))
	s.handle("GET", "/v1/webhooks/{webhook_id}/deliveries", s.authenticated(loaded(s, s.loadWebhookFor, s.handleListWebhookDeliveries)))
	// Cars, garages and searches (docs/cars.md). Reads are public (and
	// refuse wrong credentials, publicRead); writes need an administrator. Every car list shares one grammar (cars.go).
	s.handleIndexRead("/car/{car_id}", s.handleGetCar)
	s.handleIndexRead("/cars/{car_id}", s.handleGetCar)
	s.handle("PUT", "/cars/{car_id}", s.adminOnly(s.handleWriteCar(true)))
	s.handle("PATCH", "/cars/{car_id}", s.adminOnly(s.handleWriteCar(false)))
	s.handle("DELETE", "/cars/{car_id}", s.adminOnly(s.handleDelete("car_id", s.carPreconditions, carStore.DeleteCar)))
	for _, p := range []string{"/cars", "/cars/search", "/cars/search/all", "/cars/search/by-parameters", "/cars/search/by-vendor"} {
		s.handleIndexRead(p, s.handleListCars)
	}
	s.handle("POST", "/cars", s.adminOnly(s.handleCreateCar))
	s.handle("GET", "/garage/{garage_id}", s.publicRead(s.handleGetGarage))
	s.handle("GET", "/garages/{garage_id}", s.publicRead(s.handleGetGarage))
	s.handle("PUT", "/garages/{garage_id}", s.adminOnly(s.handleWriteGarage(true)))
	s.handle("PATCH", "/garages/{garage_id}", s.adminOnly(s.handleWriteGarage(false)))
	s.handle("DELETE", "/garages/{garage_id}", s.adminOnly(s.handleDelete("garage_id", s.garagePreconditions, carStore.DeleteGarage)))
	s.handle("GET", "/garages", s.publicRead(s.handleListGarages))
	s.handle("POST", "/garages", s.adminOnly(s.handleCreateGarage))
	s.handle("GET", "/garage/{garage_id}/cars", s.publicRead(s.handleGarageCars))
	s.handle("GET", "/garages/{garage_id}/cars", s.publicRead(s.handleGarageCars))
	// GET /{garage_id}/cars/{car_id} and GET /garages/{garage_id}/cars both
	// match /garages/cars/cars, which ServeMux refuses: the shape is served
	// by a dispatcher (dispatch.go) behind a three-segment catch-all that
	// every other three-segment pattern is more specific than.
	s.dispatch("/{garage_id}/{segment}/{car_id}",
		shape{"GET", "/{garage_id}/cars/{car_id}", s.publicRead(s.handleGarageCar)})
	s.handle("POST", "/searches", s.authenticated(s.handleCreateSearch))
	s.handle("GET", "/searches", s.adminOnly(s.handleListSearches))
	s.handle("GET", "/searches/{search_id}", s.publicRead(s.handleSearchResults))
	s.handle("DELETE", "/searches/{search_id}", s.adminOnly(s.handleDeleteSearch))
	s.handle("GET", "/search/{name}", s.publicRead(s.handleNamedSearch))

	// Orders (spec, Order; docs/api.md, Orders): JSON or XML, so handleXML:
	// their errors are XML for a client that speaks it. The order's
	// identity is /order/{order_id}; /orders/{order_id} is the same order.
	s.handleXML("POST", "/orders", s.authenticated(s.handleCreateOrder))
	s.handleXML("GET", "/orders", s.authenticated(s.handleListOrders))
	s.handleXML("GET", "/order/{order_id}", s.authenticated(s.handleGetOrder))
	s.handleXML("PUT", "/order/{order_id}", s.authenticated(s.handlePutOrder))
	s.handleXML("POST", "/order/{order_id}/canceled", s.authenticated(s.handleCancelOrder))
	s.handleXML("GET", "/orders/{order_id}", s.authenticated(s.handleGetOrder))
	s.handleXML("PUT", "/orders/{order_id}", s.authenticated(s.handlePutOrder))
	s.handleXML("POST", "/orders/{order_id}/canceled", s.authenticated(s.handleCancelOrder))
	// Pages for people (pages.go): the sign-in form the delegated
	// authorisation flows send a browser to, and the pages' stylesheet.
	s.handle("GET", pages.SignInPath, s.page((*pages.Pages).HandleSignIn))
	s.handle("POST", pages.SignInPath, s.page((*pages.Pages).HandleSignIn))
	s.handleXML("GET", pages.StylePath, new(pages.Pages).HandleStyle) // needs no Kit
	// The console for people (package console, docs/console.md): pages
	// over this API, which call it as any client does. Not endpoints of
	// the API, so not among its routes nor in the OpenAPI document.
	s.mountConsole()

	// OAuth 1.0a provider (oauth.go; docs/auth.md): consumers (admin), the
	// three endpoints of the flow, and the applications a user allowed.
	s.handle("POST", "/oauth/consumers", s.adminOnly(loaded(s, s.oauthManager, s.handleCreateConsumer)))
	s.handle("GET", "/oauth/consumers", s.adminOnly(loaded(s, s.oauthManager, s.handleListConsumers)))
	s.handle("GET", "/oauth/consumers/{key}", s.adminOnly(loaded(s, s.oauthManager, s.handleGetConsumer)))
	s.handle("DELETE", "/oauth/consumers/{key}", s.adminOnly(loaded(s, s.oauthManager, s.handleDeleteConsumer)))
	s.handle("POST", "/oauth/request_token", loaded(s, s.oauth, s.handleRequestToken))
	s.handle("GET", "/oauth/authorize", s.page(s.handleAuthorize))
	s.handle("POST", "/oauth/authorize", s.page(s.handleAuthorize))
	s.handle("POST", "/oauth/access_token", loaded(s, s.oauth, s.handleAccessToken))
	s.handle("GET", "/oauth/authorizations", s.authenticated(loaded(s, s.oauthManager, s.handleListAuthorizations)))
	s.handle("DELETE", "/oauth/authorizations/{id}", s.authenticated(loaded(s, s.oauthManager, s.handleRevokeAuthorization)))

	// OpenID 2.0 provider (openid.go): discovery documents, the provider
	// endpoint (direct requests by POST, checkid by GET) and the
	// confirmation form.
	s.handle("GET", "/openid", s.handleOpenIDDiscovery)
	s.handle("GET", "/openid/id/{name}", s.handleOpenIDIdentity)
	s.handle("GET", "/openid/login", s.page(s.handleOpenIDCheckID))
	s.handle("POST", "/openid/login", s.handleOpenIDPost)
	s.handle("POST", "/openid/confirm", s.page(s.handleOpenIDConfirm))
}
