package client

import (
	"context"
	"testing"

	"github.com/yard-api/yard/httpapi/apitest"
)

// ReadBark reads a task once: pending, then, once an email-count bark has
// run, the 303's own answer (the task, with the dog as DogURL) where an
// http.Client that follows redirects reads the dog.
func TestReadBark(t *testing.T) {
	e := startEventsEnv(t)
	dog := e.dog(t, "alice")
	c := e.client(&Basic{Username: "alice", Password: pw})
	ctx := context.Background()

	loc := e.Do(apitest.Request{Method: "POST", Path: dog + "barks", User: "alice", Password: pw,
		Headers: map[string]string{"Prefer": "respond-async"}, Body: map[string]string{"effect": "email-count"}}).Header.Get("Location")
	b, err := c.ReadBark(ctx, loc)
	if err != nil || b.Status != "pending" || b.Response.StatusCode != 200 || b.DogURL != "" {
		t.Fatalf("ReadBark of a pending bark: %+v, %v", b, err)
	}
	id := b.ID
	if ran, err := e.svc.RunOne(ctx); !ran || err != nil {
		t.Fatalf("run the bark: %v %v", ran, err)
	}
	b, err = c.ReadBark(ctx, loc)
	if err != nil || b.Response.StatusCode != 303 || b.ID != id || b.Status != "succeeded" || b.Effect != "email-count" || b.DogURL != e.URL+dog {
		t.Fatalf("ReadBark of a finished email-count bark: %+v, %v; want the task, succeeded, with 303 to %s", b, err, e.URL+dog)
	}
	// What ReadBark guards against: Get follows the 303 and reads the dog.
	var followed Bark
	if err := c.Get(ctx, loc[len(e.URL):], &followed); err != nil || followed.ID == id || followed.Status != "" {
		t.Errorf("Get of the finished task: %+v, %v; want the dog (a redirect followed)", followed, err)
	}

	if _, err := c.ReadBark(ctx, e.URL+dog+"barks/nope"); StatusOf(err) != 404 {
		t.Errorf("unknown bark: %v, want 404", err)
	}
	if _, err := e.client(&Basic{Username: "alice", Password: "wrong"}).ReadBark(ctx, loc); StatusOf(err) != 401 {
		t.Errorf("wrong password: %v, want 401", err)
	}
	for _, u := range []string{"https://elsewhere.example" + dog, "//elsewhere.example/x", e.URL + "@evil.example/"} {
		if _, err := c.ReadBark(ctx, u); err == nil || StatusOf(err) != 0 {
			t.Errorf("ReadBark(%q): %v, want a refusal without a request", u, err)
		}
	}
}
