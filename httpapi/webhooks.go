package httpapi

import (
	"context"
	"net/http"

	"github.com/yard-api/yard"
)

// webhookStore is what the webhook endpoints need of the store; *store.DB is
// one.
type webhookStore interface {
	CreateWebhook(ctx context.Context, w *yard.Webhook) error
	DeleteWebhook(ctx context.Context, id string) error
	FindWebhook(ctx context.Context, id string) (*yard.Webhook, error)
	FindWebhookDeliveries(ctx context.Context, webhookID string, offset, limit int) ([]*yard.WebhookDelivery, int, error)
	FindWebhooks(ctx context.Context, f yard.WebhookFilter) ([]*yard.Webhook, int, error)
	UpdateWebhook(ctx context.Context, id string, up yard.WebhookUpdate) (*yard.Webhook, error)
}

// Webhooks (docs/events.md, "Webhooks"): a person's subscriptions of a URL
// to event types, and their delivery attempts. Package webhooks delivers;
// these endpoints only write and read the store.

// WebhookChecker is what the webhook endpoints need of the deliverer
// (package webhooks' *Service).
type WebhookChecker interface {
	// CheckURL applies the delivery policy to a subscription's URL being
	// written: EINVALID naming url when it cannot be used.
	CheckURL(u string) error
}

// webhookView is a subscription as the API shows it; Secret only in the
// answer to its creation.
type webhookView struct {
	ID             string   `json:"id"`
	Owner          string   `json:"owner"`
	URL            string   `json:"url"`
	Types          []string `json:"types"`
	Enabled        bool     `json:"enabled"`
	DisabledReason *string  `json:"disabledReason"`
	FailingSince   *string  `json:"failingSince"`
	CreatedAt      string   `json:"createdAt"`
	UpdatedAt      string   `json:"updatedAt"`
	Secret         string   `json:"secret,omitempty"`
}

func newWebhookView(w *yard.Webhook) webhookView {
	v := webhookView{ID: w.ID, Owner: w.Owner, URL: w.URL, Types: w.Types, Enabled: w.Enabled, DisabledReason: nonZero(w.DisabledReason),
		FailingSince: TimestampPtr(w.FailingSince), CreatedAt: Timestamp(w.CreatedAt), UpdatedAt: Timestamp(w.UpdatedAt)}
	if v.Types == nil {
		v.Types = []string{}
	}
	return v
}

// deliveryView is one delivery attempt.
type deliveryView struct {
	ID        string  `json:"id"`
	EventID   string  `json:"eventId"`
	EventType string  `json:"eventType"`
	Subject   string  `json:"subject"`
	Attempt   int     `json:"attempt"`
	Status    string  `json:"status"`
	Code      *int    `json:"code"`
	Error     *string `json:"error"` // null when there is none
	Time      string  `json:"time"`
}

func (s *Server) newDeliveryView(d *yard.WebhookDelivery) deliveryView {
	return deliveryView{ID: d.ID, EventID: d.Event.ID.String(), EventType: d.Event.Type, Subject: s.url(d.Event.Subject),
		Attempt: d.Attempt, Status: d.Status, Code: nonZero(d.Code), Error: nonZero(d.Error), Time: Timestamp(d.Time)}
}

// webhookWrite is the body of POST /v1/webhooks and of a PATCH (a JSON
// merge patch, RFC 7396; enabled only there).
type webhookWrite struct {
	sent    `json:"-"`
	URL     *string   `json:"url"`
	Types   *[]string `json:"types"`
	Enabled *bool     `json:"enabled"`
}

// checkWebhook checks the fields of a write: the URL against the delivery
// policy, the types against the event types.
func (s *Server) checkWebhook(in *webhookWrite) error {
	if in.URL != nil {
		if err := s.deps.Webhooks.CheckURL(*in.URL); err != nil {
			return err
		}
	}
	if in.Types != nil {
		types, err := yard.ValidateWebhookTypes(*in.Types)
		if err != nil {
			return err
		}
		in.Types = &types
	}
	return nil
}

// handleCreateWebhook answers POST /v1/webhooks: 201 with the subscription
// and, this once, its secret.
func (s *Server) handleCreateWebhook(w http.ResponseWriter, r *http.Request) {
	in, err := decode[webhookWrite](r)
	if err == nil {
		err = in.refuseNulls("types")
	}
	if err == nil && in.Enabled != nil {
		err = yard.Invalid("A subscription is created enabled.", yard.FieldError{Field: "enabled", Message: "is set with PATCH once the subscription exists"})
	}
	if err == nil && in.URL == nil {
		err = yard.Invalid("The url is required.", yard.FieldError{Field: "url", Message: "is required"})
	}
	if err == nil {
		err = s.checkWebhook(&in)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	hook := &yard.Webhook{Owner: yard.PrincipalFromContext(r.Context()).UserID, URL: *in.URL}
	setIf(&hook.Types, in.Types)
	if err := s.db.webhooks.CreateWebhook(r.Context(), hook); err != nil {
		s.error(w, r, err)
		return
	}
	v := newWebhookView(hook)
	v.Secret = hook.Secret
	w.Header().Set("Location", s.url(yard.WebhookPath(hook.ID)))
	w.Header().Set("Cache-Control", "no-store") // it holds the secret
	writeJSON(w, http.StatusCreated, v)
}

// handleListWebhooks answers GET /v1/webhooks: a page of the caller's
// subscriptions (every one for an administrator), oldest first.
func (s *Server) handleListWebhooks(w http.ResponseWriter, r *http.Request) {
	writePagedList(s, w, r, func(ctx context.Context, pg yard.Page) ([]*yard.Webhook, int, error) {
		owner := ownedBy(yard.PrincipalFromContext(ctx))
		return s.db.webhooks.FindWebhooks(ctx, yard.WebhookFilter{Offset: pg.Offset, Limit: pg.Max, Owner: owner})
	}, newWebhookView)
}

// loadWebhookFor loads the subscription of the path for the caller: its
// owner or an administrator. Anyone else's is ENOTFOUND, as if it did not
// exist.
func (s *Server) loadWebhookFor(r *http.Request) (*yard.Webhook, error) {
	hook, err := s.db.webhooks.FindWebhook(r.Context(), r.PathValue("webhook_id"))
	if p := yard.PrincipalFromContext(r.Context()); err == nil && hook.Owner != p.UserID && !p.IsAdmin() {
		err = yard.Errorf(yard.ENOTFOUND, "Webhook not found.")
	}
	return hook, err
}

// handleGetWebhook answers GET /v1/webhooks/{webhook_id} (never with the
// secret).
func (s *Server) handleGetWebhook(w http.ResponseWriter, r *http.Request, hook *yard.Webhook) {
	writeRepresentation(w, r, http.StatusOK, newWebhookView(hook), hook.UpdatedAt)
}

// handlePatchWebhook applies a JSON merge patch (RFC 7396) of url, types
// and enabled: 200 with the subscription. types null is every type.
func (s *Server) handlePatchWebhook(w http.ResponseWriter, r *http.Request, hook *yard.Webhook) {
	in, err := decode[webhookWrite](r)
	if err == nil {
		err = in.refuseNulls("types")
	}
	if err == nil && in.Types == nil && in.isNull("types") {
		in.Types = &[]string{}
	}
	if err == nil {
		err = s.checkWebhook(&in)
	}
	if err == nil {
		err = writePreconditions(r, etagOf(newWebhookView(hook)), hook.UpdatedAt, "webhook")
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	hook, err = s.db.webhooks.UpdateWebhook(r.Context(), hook.ID, yard.WebhookUpdate{URL: in.URL, Types: in.Types, Enabled: in.Enabled})
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeRepresentation(w, r, http.StatusOK, newWebhookView(hook), hook.UpdatedAt)
}

// handleDeleteWebhook answers DELETE /v1/webhooks/{webhook_id}: 204; its
// deliveries go with it.
func (s *Server) handleDeleteWebhook(w http.ResponseWriter, r *http.Request, hook *yard.Webhook) {
	err := writePreconditions(r, etagOf(newWebhookView(hook)), hook.UpdatedAt, "webhook")
	if err == nil {
		err = s.db.webhooks.DeleteWebhook(r.Context(), hook.ID)
	}
	s.writeNoContent(w, r, err)
}

// handleListWebhookDeliveries answers GET
// /v1/webhooks/{webhook_id}/deliveries: a page of delivery attempts,
// newest first.
func (s *Server) handleListWebhookDeliveries(w http.ResponseWriter, r *http.Request, hook *yard.Webhook) {
	w.Header().Set("Cache-Control", "no-store") // as every problem is
	writePagedList(s, w, r, func(ctx context.Context, pg yard.Page) ([]*yard.WebhookDelivery, int, error) {
		// max=0 asks for the total only: one row is read, none shown
		// (pageViews).
		return s.db.webhooks.FindWebhookDeliveries(ctx, hook.ID, pg.Offset, max(pg.Max, 1))
	}, s.newDeliveryView)
}
