package client_test

import (
	"context"
	"fmt"
	"log"

	"github.com/yard-api/yard/client"
)

// The README's example: a client of the quick start's server, which trusts
// its self-signed certificate and signs in with the token pair.
func Example() {
	ctx := context.Background()
	pw, id := "carol's password", "DOG_ID"

	c := client.New("https://localhost:8443", nil,
		&client.TokenPair{Username: "carol", Password: pw}, // signs in, refreshes by itself
		client.WithCAFile("data/tls/cert.pem"))
	var dog map[string]any
	if err := c.Get(ctx, "/v1/dogs/"+id+"/", &dog); err != nil {
		log.Fatal(err)
	}
	fmt.Println(dog["name"])
}
