package apitest

import (
	"cmp"
	"context"
	"testing"

	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/openid"
	"github.com/yard-api/yard/store"
)

// WithAuthKit installs every first-party authentication scheme over db
// (keys in a temporary directory) and the OpenID provider, after letting
// mod change the configuration, and stores the kit in *out.
func WithAuthKit(t testing.TB, db *store.DB, out **auth.Kit, mod func(*auth.Config)) Option {
	dir := t.TempDir()
	return func(d *httpapi.Deps) {
		cfg := auth.Config{Store: db, Basic: d.Auth.Basic(), KeyDir: dir, Issuer: d.BaseURL}
		if cfg.Basic != nil {
			cfg.Hashing = cfg.Basic.Hashing
		}
		if mod != nil {
			mod(&cfg)
		}
		if b := cfg.Basic; b != nil {
			b.Limiter = cmp.Or(cfg.Limiter, b.Limiter)
			b.Hashing = cfg.Hashing // one gate for the process, as serve wires it
		}
		kit, err := auth.NewKit(context.Background(), cfg)
		if err != nil {
			t.Fatalf("auth kit: %v", err)
		}
		d.Auth, d.Kit = kit.Chain, kit
		d.OpenID = &openid.Provider{Store: db, Box: kit.Box, Endpoint: d.BaseURL + httpapi.OpenIDEndpoint, Now: kit.Now}
		if out != nil {
			*out = kit
		}
	}
}
