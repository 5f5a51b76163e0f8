package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

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
	resp, err := nc.Do(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 400 {
		return nil, problemOf(resp)
	}
	b := &Bark{Response: resp}
	if len(bytes.TrimSpace(resp.Body)) > 0 {
		if err := json.Unmarshal(resp.Body, b); err != nil {
			return nil, fmt.Errorf("client: ReadBark: the answer (%d) is not a bark: %w", resp.StatusCode, err)
		}
	}
	switch {
	case resp.StatusCode == http.StatusSeeOther:
		b.DogURL = resp.Header.Get("Location")
		if b.Status == "" {
			b.Status = "succeeded"
		}
	case resp.StatusCode >= 300:
		return nil, fmt.Errorf("client: ReadBark: unexpected %s", resp.Status)
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
