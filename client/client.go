// Package client calls the yard API from Go with any of its authentication
// schemes: Basic, Digest (RFC 7616), a cookie session, the JWT token pair
// (refreshed automatically), a public-key token, or signed requests.
//
//	c := client.New("https://localhost:8443", nil, &client.TokenPair{Username: "alice", Password: pw})
//	var dog map[string]any
//	err := c.Get(ctx, "/v1/dogs/"+id+"/", &dog)
//
// It depends only on the standard library.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
)

// Authenticator adds credentials to requests and may answer a refusal by
// renewing them.
type Authenticator interface {
	// Apply adds credentials to req (called before each attempt).
	Apply(c *Client, req *http.Request) error
	// Retry is called with a refused response (400 or 401). It reports
	// whether the request should be sent again, after renewing credentials.
	Retry(ctx context.Context, c *Client, resp *Response) (bool, error)
}

// Client is a yard API client. It is safe for concurrent use when its
// Authenticator is.
type Client struct {
	BaseURL string
	HTTP    *http.Client
	Auth    Authenticator
	// UserAgent is sent with every request.
	UserAgent string

	// err is an option's failure (WithCAFile of an unreadable file),
	// returned by every request.
	err error
}

// New returns a client for the API at baseURL. A nil httpClient is
// http.DefaultClient; a nil auth sends no credentials. Options such as
// WithRootCAs or WithCAFile adjust the client.
func New(baseURL string, httpClient *http.Client, auth Authenticator, opts ...Option) *Client {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	c := &Client{BaseURL: strings.TrimRight(baseURL, "/"), HTTP: httpClient, Auth: auth, UserAgent: "yard-go-client"}
	for _, o := range opts {
		if err := o(c); err != nil && c.err == nil {
			c.err = err
		}
	}
	return c
}

// Response is a response with its body read.
type Response struct {
	*http.Response
	Body []byte
}

// Problem is an RFC 9457 problem body, returned as the error of a request
// that failed with status 400 or above.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	// Errors lists bad fields of a validation problem.
	Errors []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"errors"`
	// Response is the whole response.
	Response *Response `json:"-"`
}

func (p *Problem) Error() string {
	return fmt.Sprintf("yard: %d %s: %s", p.Status, p.Title, p.Detail)
}

// Slug returns the last segment of the problem type ("token-expired", ...).
func (p *Problem) Slug() string {
	return p.Type[strings.LastIndex(p.Type, "/")+1:]
}

// IsProblem reports whether err is a problem with the given type slug.
func IsProblem(err error, slug string) bool {
	var p *Problem
	return errors.As(err, &p) && p.Slug() == slug
}

// StatusOf returns the HTTP status of a problem error, or 0.
func StatusOf(err error) int {
	var p *Problem
	if errors.As(err, &p) {
		return p.Status
	}
	return 0
}

func problemOf(resp *Response) *Problem {
	p := &Problem{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode), Response: resp}
	_ = json.Unmarshal(resp.Body, p)
	return p
}

// answer passes on a request's outcome, its *Problem as the error when
// its status is 400 or more.
func answer(resp *Response, err error) (*Response, error) {
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 400 {
		return resp, problemOf(resp)
	}
	return resp, nil
}

// Get reads path into out (JSON), failing with a *Problem on an error status.
func (c *Client) Get(ctx context.Context, path string, out any) error {
	return c.JSON(ctx, http.MethodGet, path, nil, out)
}

// JSON sends in (as JSON, unless nil) and decodes a 2xx answer into out
// (unless nil). A status of 400 or more is a *Problem.
func (c *Client) JSON(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	resp, err := answer(c.Do(ctx, method, path, body, nil))
	if err != nil {
		return err
	}
	if out != nil && len(bytes.TrimSpace(resp.Body)) > 0 {
		return json.Unmarshal(resp.Body, out)
	}
	return nil
}

// Do sends a request to path (with its query) with the client's
// credentials and returns the response whatever its status; it retries once
// when the Authenticator renews its credentials after a refusal. A non-nil
// body is sent as JSON unless header sets a Content-Type.
func (c *Client) Do(ctx context.Context, method, path string, body []byte, header http.Header) (*Response, error) {
	for attempt := 0; ; attempt++ {
		resp, err := c.send(ctx, method, path, body, header, c.Auth)
		if err != nil {
			return nil, err
		}
		again, err := c.renew(ctx, attempt, resp)
		if err != nil {
			return nil, err
		}
		if !again {
			return resp, nil
		}
	}
}

// renew reports whether the answer of a first attempt should be sent
// again: when it refused the credentials (400 or 401) and the
// Authenticator renewed them.
func (c *Client) renew(ctx context.Context, attempt int, resp *Response) (bool, error) {
	if attempt > 0 || c.Auth == nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusBadRequest) {
		return false, nil
	}
	return c.Auth.Retry(ctx, c, resp)
}

// send makes one request with the given authenticator (nil: none) and
// reads the answer.
func (c *Client) send(ctx context.Context, method, path string, body []byte, header http.Header, auth Authenticator) (*Response, error) {
	h := http.Header{}
	maps.Copy(h, header)
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
		if h.Get("Content-Type") == "" {
			h.Set("Content-Type", "application/json")
		}
	}
	h.Set("Accept", "application/json")
	res, err := c.roundTrip(ctx, method, path, rd, h, auth)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	return &Response{Response: res, Body: b}, nil
}

// roundTrip sends one request to path with header, the client's
// User-Agent and auth's credentials (nil: none), and returns the answer
// with its body unread.
func (c *Client) roundTrip(ctx context.Context, method, path string, body io.Reader, header http.Header, auth Authenticator) (*http.Response, error) {
	if c.err != nil {
		return nil, c.err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, body)
	if err != nil {
		return nil, err
	}
	maps.Copy(req.Header, header)
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	if auth != nil {
		if err := auth.Apply(c, req); err != nil {
			return nil, err
		}
	}
	return c.HTTP.Do(req)
}

// post sends a JSON body without the client's authenticator (for sign-in
// endpoints) and decodes a 2xx answer.
func (c *Client) post(ctx context.Context, path string, in any, header http.Header, out any) (*Response, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	resp, err := answer(c.send(ctx, http.MethodPost, path, body, header, nil))
	if err != nil {
		return resp, err
	}
	if out != nil {
		if err := json.Unmarshal(resp.Body, out); err != nil {
			return resp, err
		}
	}
	return resp, nil
}
