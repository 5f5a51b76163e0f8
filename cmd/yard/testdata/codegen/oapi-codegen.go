// Five calls through the client oapi-codegen generates from yard's
// /openapi.json (package yardapi), as a person with Basic; run by
// TestGeneratedClients (docs/clients.md, "Generated clients") with
// YARD_URL, YARD_USER, YARD_PASSWORD and YARD_CA (the server's
// certificate). It prints one JSON line of what it read.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"yardgen/yardapi"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pem, err := os.ReadFile(os.Getenv("YARD_CA"))
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return errors.New("YARD_CA holds no certificate")
	}
	hc := &http.Client{
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}},
		// A bark task that finished and changed the dog answers 303 to the
		// dog: that answer is the task's, not a step to follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	basic := func(_ context.Context, req *http.Request) error {
		req.SetBasicAuth(os.Getenv("YARD_USER"), os.Getenv("YARD_PASSWORD"))
		return nil
	}
	c, err := yardapi.NewClientWithResponses(os.Getenv("YARD_URL"), yardapi.WithHTTPClient(hc), yardapi.WithRequestEditorFn(basic))
	if err != nil {
		return err
	}

	list, err := c.ListDogsWithResponse(ctx, nil)
	if err != nil {
		return err
	}
	if list.JSON200 == nil {
		return unexpected("list dogs", list.StatusCode(), list.Body)
	}

	name, email, effect := "Rex", "rex@example.org", yardapi.DogWriteBarkEffect("email-count")
	created, err := c.CreateDogWithResponse(ctx, yardapi.DogWrite{Name: &name, Email: &email, BarkEffect: &effect})
	if err != nil {
		return err
	}
	if created.JSON201 == nil || created.JSON201.Id == nil {
		return unexpected("create a dog", created.StatusCode(), created.Body)
	}
	dogID := *created.JSON201.Id // readOnly: a pointer in oapi-codegen's types

	// An asynchronous bark, then its task read until it finishes: an
	// email-count bark's task ends with 303, its body the task.
	async, wait := "respond-async", "wait=10"
	bark, err := c.CreateBarkWithResponse(ctx, dogID, &yardapi.CreateBarkParams{Prefer: &async}, yardapi.BarkRequest{})
	if err != nil {
		return err
	}
	if bark.JSON202 == nil {
		return unexpected("an asynchronous bark", bark.StatusCode(), bark.Body)
	}
	task, status := bark.JSON202, bark.StatusCode()
	for i := 0; i < 30 && task.Status != "succeeded" && task.Status != "failed" && task.Status != "canceled"; i++ {
		got, err := c.GetBarkWithResponse(ctx, dogID, bark.JSON202.Id, &yardapi.GetBarkParams{Prefer: &wait})
		if err != nil {
			return err
		}
		switch status = got.StatusCode(); {
		case got.JSON200 != nil:
			task = got.JSON200
		case got.JSON303 != nil:
			task = got.JSON303
		default:
			return unexpected("read the task", status, got.Body)
		}
	}
	if task.Status != "succeeded" || status != http.StatusSeeOther || task.Id != bark.JSON202.Id {
		return fmt.Errorf("the finished task: %d %+v, want 303 with the task succeeded", status, task)
	}

	red := yardapi.CarColor("red")
	cars, err := c.ListCarsWithResponse(ctx, &yardapi.ListCarsParams{Color: &red})
	if err != nil {
		return err
	}
	if cars.JSON200 == nil || len(cars.JSON200.Items) == 0 {
		return unexpected("list red cars", cars.StatusCode(), cars.Body)
	}
	for _, car := range cars.JSON200.Items {
		if !strings.EqualFold(car.Color, "red") {
			return fmt.Errorf("list red cars: a %s car", car.Color)
		}
	}
	car, err := c.GetCarWithResponse(ctx, cars.JSON200.Items[0].Id)
	if err != nil {
		return err
	}
	if car.JSON200 == nil {
		return unexpected("read a car", car.StatusCode(), car.Body)
	}

	out, err := json.Marshal(map[string]any{"dogs": list.JSON200.Total, "dog": dogID, "task": task.Id, "taskStatus": status,
		"redCars": cars.JSON200.Total, "car": car.JSON200.Id})
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	return nil
}

// unexpected is the error of an answer the program did not expect.
func unexpected(what string, status int, body []byte) error {
	return fmt.Errorf("%s: %d %s", what, status, body)
}
