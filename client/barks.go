package client

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Bark waits (docs/events.md): a GET of a bark held with Prefer: wait
// until the bark finishes.

// Bark is a bark task as GET /v1/dogs/{dog_id}/barks/{bark_id} shows it
// (docs/barks.md).
type Bark struct {
	ID     string `json:"id"`
	Dog    string `json:"dog"`
	Effect string `json:"effect"`
	// Status is pending, running, succeeded, failed or canceled.
	Status     string    `json:"status"`
	Async      bool      `json:"async"`
	Source     string    `json:"source"`
	CreatedAt  time.Time `json:"createdAt"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt"`
	// Timestamp is when the dog barked (a succeeded record bark).
	Timestamp time.Time `json:"timestamp"`
	Error     string    `json:"error"`
	Output    string    `json:"output"`
	Attempts  int       `json:"attempts"`

	// DogURL is set when the answer was 303 See Other to the dog: the
	// bark succeeded and changed the dog (email-count, or a fetch-code
	// that moved its code revision).
	DogURL string `json:"-"`
	// Response is the answer the bark was read from.
	Response *Response `json:"-"`
}

// Finished reports whether the bark reached a final state.
func (b *Bark) Finished() bool {
	return b.Status == "succeeded" || b.Status == "failed" || b.Status == "canceled"
}

// WaitBark reads the bark at barkURL (the Location of a 202, or its path)
// until it has finished, holding each GET with Prefer: wait=N (RFC 7240
// §4.3; N the seconds left, at most 60) so that the server answers as soon
// as the bark finishes. A 303 to the dog is the answer of a bark that
// succeeded and changed the dog; it is not followed.
//
// It returns the finished bark, a failed or canceled one included, with a
// nil error. When limit (if positive) or ctx's deadline passes first, it
// returns the bark as last read with an error wrapping
// context.DeadlineExceeded; when ctx is cancelled, with ctx's error. A
// refusal is a *Problem; a dropped connection, 429 and 503 are tried again
// within the time left.
func (c *Client) WaitBark(ctx context.Context, barkURL string, limit time.Duration) (*Bark, error) {
	nc, path, err := c.barkClient("WaitBark", barkURL)
	if err != nil {
		return nil, err
	}

	var deadline time.Time
	if limit > 0 {
		deadline = time.Now().Add(limit)
	}
	if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
		deadline = d
	}
	var last *Bark
	failures := 0
	for {
		wait := maxWait
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return last, notFinished(last)
			}
			wait = min(wait, int(left/time.Second))
		}
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, time.Duration(wait)*time.Second+waitGrace)
		resp, err := nc.Do(rctx, http.MethodGet, path, nil, http.Header{"Prefer": {"wait=" + strconv.Itoa(wait)}})
		cancel()
		var pause time.Duration
		switch {
		case ctx.Err() != nil:
			return last, ctx.Err()
		case err != nil:
			var p *Problem
			if errors.As(err, &p) {
				return last, err // a renewal of credentials refused
			}
			pause = min(time.Second<<min(failures, 4), 10*time.Second)
			failures++
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable ||
			resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusGatewayTimeout:
			pause = retryAfter(resp.Header, time.Now())
			if pause <= 0 {
				pause = min(time.Second<<min(failures, 4), 10*time.Second)
			}
			failures++
		case resp.StatusCode >= 400:
			return last, problemOf(resp)
		default:
			failures = 0
			b, err := barkOf("WaitBark", resp)
			if err != nil {
				return last, err
			}
			last = b
			if b.Finished() {
				return b, nil
			}
			// A server that does not hold the answer (no events, or
			// no room to wait) answers at once: poll, not spin.
			if time.Since(start) < time.Second {
				pause = time.Second
			}
		}
		if pause > 0 {
			if !deadline.IsZero() {
				pause = min(pause, time.Until(deadline))
			}
			t := time.NewTimer(max(pause, 0))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return last, ctx.Err()
			}
		}
	}
}

// notFinished is WaitBark's error when time ran out.
func notFinished(b *Bark) error {
	if b == nil {
		return fmt.Errorf("client: WaitBark: no answer in time: %w", context.DeadlineExceeded)
	}
	return fmt.Errorf("client: bark %s still %s: %w", b.ID, b.Status, context.DeadlineExceeded)
}

// ReadBark reads the bark task at barkURL (the Location of a 202, or its
// path) once. It does not follow a redirect: a bark that finished and
// changed the dog (email-count, or a fetch-code that moved the dog's code)
// answers 303 See Other with the task as its body and the dog as its
// Location (Bark.DogURL). That answer is the task's; an http.Client that
// follows it reads the dog and takes it for the task (docs/clients.md,
// "Reading a bark task"). A refusal is a *Problem. WaitBark reads the same
// way until the bark finishes.
func (c *Client) ReadBark(ctx context.Context, barkURL string) (*Bark, error) {
	nc, path, err := c.barkClient("ReadBark", barkURL)
	if err != nil {
		return nil, err
	}
	resp, err := answer(nc.Do(ctx, http.MethodGet, path, nil, nil))
	if err != nil {
		return nil, err
	}
	return barkOf("ReadBark", resp)
}

// barkOf reads a bark from an answer under 400: a 303 is the answer of a
// bark that succeeded and changed the dog, any other redirect an error.
func barkOf(method string, resp *Response) (*Bark, error) {
	b := &Bark{Response: resp}
	if len(bytes.TrimSpace(resp.Body)) > 0 {
		if err := json.Unmarshal(resp.Body, b); err != nil {
			return nil, fmt.Errorf("client: %s: the answer (%d) is not a bark: %w", method, resp.StatusCode, err)
		}
	}
	switch {
	case resp.StatusCode == http.StatusSeeOther:
		b.DogURL = resp.Header.Get("Location")
		b.Status = cmp.Or(b.Status, "succeeded")
	case resp.StatusCode >= 300:
		return nil, fmt.Errorf("client: %s: unexpected %s", method, resp.Status)
	}
	return b, nil
}

// barkClient returns the path of barkURL, which must be a URL of the
// client's own server (credentials go nowhere else), and a copy of the
// client whose http.Client answers a redirect instead of following it.
func (c *Client) barkClient(method, barkURL string) (*Client, string, error) {
	path, ok := strings.CutPrefix(barkURL, c.BaseURL)
	if !ok && (!strings.HasPrefix(barkURL, "/") || strings.HasPrefix(barkURL, "//")) || ok && !strings.HasPrefix(path, "/") {
		return nil, "", fmt.Errorf("client: %s: %q is not a URL of %s", method, barkURL, c.BaseURL)
	}
	if c.HTTP == nil {
		return nil, "", errors.New("client: " + method + ": the client has no http.Client")
	}
	hc := *c.HTTP
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	nc := *c
	nc.HTTP = &hc
	return &nc, path, nil
}
