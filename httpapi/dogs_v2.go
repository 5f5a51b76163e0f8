package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/yard-api/yard"
)

// link is a hypertext link object.
type link struct {
	Href string `json:"href"`
}

// ownerLink is the v2 owner: a person's id with a link to it.
type ownerLink struct {
	ID   string `json:"id"`
	Href string `json:"href"`
}

// dogV2View is the v2 representation of a dog (docs/barks.md).
type dogV2View struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Email        string          `json:"email"`
	Owner        ownerLink       `json:"owner"`
	BarkCount    int64           `json:"barkCount"`
	BarkEffect   string          `json:"barkEffect"`
	CodeURL      string          `json:"codeUrl"`
	CodeRevision string          `json:"codeRevision"`
	Schedule     *barksView      `json:"schedule,omitempty"`
	Links        map[string]link `json:"_links"`
}

// dogV2Write is the writable part of a v2 dog: owner is a link object
// ({"id": ...}) or a plain id.
type dogV2Write struct {
	sent         `json:"-"`
	ID           *string         `json:"id"`
	Name         *string         `json:"name"`
	Email        *string         `json:"email"`
	Owner        json.RawMessage `json:"owner"`
	BarkEffect   *string         `json:"barkEffect"`
	CodeURL      *string         `json:"codeUrl"`
	BarkCount    *int64          `json:"barkCount"`
	CodeRevision *string         `json:"codeRevision"`
	Links        json.RawMessage `json:"_links"`
	// Schedule is the bark schedule (barks in v1).
	Schedule json.RawMessage `json:"schedule"`
}

var dogV2 = &dogVersion{
	path: func(id string) string { return "/v2/dogs/" + id },
	view: func(s *Server, d *yard.Dog) any {
		v1 := newDogView(d)
		return dogV2View{
			ID: d.ID, Name: d.Name, Email: d.Email,
			Owner:     ownerLink{ID: d.Owner, Href: s.url("/v1/people/" + d.Owner)},
			BarkCount: d.BarkCount, BarkEffect: d.BarkEffect, CodeURL: yard.DisplayCodeURL(d.CodeURL), CodeRevision: d.CodeRevision,
			Schedule: v1.Barks,
			Links: map[string]link{
				"self":                {s.url("/v2/dogs/" + d.ID)},
				"predecessor-version": {s.url(yard.DogPath(d.ID))},
				"owner":               {s.url("/v1/people/" + d.Owner)},
				"barks":               {s.url(yard.DogPath(d.ID) + "barks")},
			},
		}
	},
	decode: func(r *http.Request) (dogWrite, error) {
		in, err := decode[dogV2Write](r)
		if err != nil {
			return dogWrite{}, err
		}
		out := dogWrite{sent: in.sent, ID: in.ID, Name: in.Name, Email: in.Email, BarkEffect: in.BarkEffect, CodeURL: in.CodeURL,
			BarkCount: in.BarkCount, CodeRevision: in.CodeRevision, Barks: in.Schedule}
		if raw := bytes.TrimSpace(in.Owner); len(raw) > 0 && string(raw) != "null" {
			var id string
			if raw[0] == '{' {
				o, err := unmarshalStrict[ownerLink](raw)
				if err != nil || o.ID == "" {
					return out, yard.Invalid("The owner is malformed.", yard.FieldError{Field: "owner", Message: `must be {"id": "<person id>"} or a person id`})
				}
				id = o.ID
			} else if err := json.Unmarshal(raw, &id); err != nil {
				return out, yard.Invalid("The owner is malformed.", yard.FieldError{Field: "owner", Message: `must be {"id": "<person id>"} or a person id`})
			}
			out.Owner = &id
		}
		return out, nil
	},
	headers: func(s *Server, w http.ResponseWriter, d *yard.Dog) {
		w.Header().Set("Link", "<"+s.url(yard.DogPath(d.ID))+`>; rel="predecessor-version"`)
	},
}
