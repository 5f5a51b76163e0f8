package main

import (
	"context"
	"log/slog"
	"time"
)

func init() {
	wirings = append(wirings, wireOpenID)
}

// wireOpenID purges the OpenID provider's expired associations and
// response nonces now and then (the provider itself is built by the API
// from the authentication kit, httpapi/openid.go).
func wireOpenID(ctx context.Context, a *app) error {
	a.background = append(a.background, func(ctx context.Context) {
		t := time.NewTicker(time.Minute)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				if err := a.db.PurgeOpenID(ctx, now); err != nil && ctx.Err() == nil {
					a.logger.Warn("purging expired OpenID state", slog.String("error", err.Error()))
				}
			}
		}
	})
	return nil
}
