package httpapi

// signedQueryParams are the query variables of a signed request other than
// apiKey (the security scheme names it), from openapi/signed.json.
var signedQueryParams = []string{"signed-timestamp", "signed-signature", "signed-method", "signed-bodyhash"}

// addSignedQueryParams completes an operation that takes credentials
// (docs/auth.md): it lists the signed-request query variables, with the
// optional method and body binding, and the answers any password check
// can give, 429 from the login rate limit and 503 when password hashing
// is busy.
func addSignedQueryParams(op map[string]any) {
	params, _ := op["parameters"].([]any)
	for _, name := range signedQueryParams {
		params = append(params, map[string]any{"$ref": "#/components/parameters/" + name})
	}
	op["parameters"] = params
	if resp, ok := op["responses"].(map[string]any); ok {
		if _, ok := resp["429"]; !ok {
			resp["429"] = map[string]any{"$ref": "#/components/responses/TooManyRequests"}
		}
		if _, ok := resp["503"]; !ok {
			resp["503"] = map[string]any{"$ref": "#/components/responses/PasswordCheckBusy"}
		}
	}
}
