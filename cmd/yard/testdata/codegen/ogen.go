// Five calls through the client ogen generates from yard's /openapi.json
// (package api), as a person with Basic; run by TestGeneratedClients
// (docs/clients.md, "Generated clients") with YARD_URL, YARD_USER,
// YARD_PASSWORD and YARD_CA (the server's certificate). It prints one JSON
// line of what it read.
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

	"github.com/ogen-go/ogen/ogenerrors"

	"ogengen/api"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// basicOnly answers ogen's client for basicAuth and skips every other
// scheme: ogen applies each scheme an operation lists whose source returns
// no error, then checks that one of the operation's alternatives is met.
type basicOnly struct{ user, password string }

func (b basicOnly) BasicAuth(context.Context, api.OperationName) (api.BasicAuth, error) {
	return api.BasicAuth{Username: b.user, Password: b.password}, nil
}

func (basicOnly) BearerAuth(context.Context, api.OperationName) (api.BearerAuth, error) {
	return api.BearerAuth{}, ogenerrors.ErrSkipClientSecurity
}

func (basicOnly) Oauth1Query(context.Context, api.OperationName) (api.Oauth1Query, error) {
	return api.Oauth1Query{}, ogenerrors.ErrSkipClientSecurity
}

func (basicOnly) RefreshToken(context.Context, api.OperationName) (api.RefreshToken, error) {
	return api.RefreshToken{}, ogenerrors.ErrSkipClientSecurity
}

func (basicOnly) SessionCookie(context.Context, api.OperationName) (api.SessionCookie, error) {
	return api.SessionCookie{}, ogenerrors.ErrSkipClientSecurity
}

func (basicOnly) SignedRequest(context.Context, api.OperationName) (api.SignedRequest, error) {
	return api.SignedRequest{}, ogenerrors.ErrSkipClientSecurity
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
	c, err := api.NewClient(os.Getenv("YARD_URL"), basicOnly{os.Getenv("YARD_USER"), os.Getenv("YARD_PASSWORD")}, api.WithClient(hc))
	if err != nil {
		return err
	}

	// ogen answers each status with its own type (an interface per
	// operation); a status the document does not list is an error.
	listRes, err := c.ListDogs(ctx, api.ListDogsParams{})
	if err != nil {
		return err
	}
	list, ok := listRes.(*api.ListDogsOKHeaders)
	if !ok {
		return unexpected("list dogs", listRes)
	}

	createdRes, err := c.CreateDog(ctx, &api.DogWrite{Name: api.NewOptString("Rex"), Email: api.NewOptString("rex@example.org"),
		BarkEffect: api.NewOptDogWriteBarkEffect(api.DogWriteBarkEffectEmailCount)})
	if err != nil {
		return err
	}
	created, ok := createdRes.(*api.DogHeaders)
	if !ok {
		return unexpected("create a dog", createdRes)
	}
	dogID := created.Response.ID

	// An asynchronous bark, then its task read until it finishes: an
	// email-count bark's task ends with 303, its body the task. ogen names
	// the wrapper of a 202 and of a 303 after the response the document
	// describes them with (BarkNowAccepted): in getBark it is the 303's.
	barkRes, err := c.CreateBark(ctx, api.OptBarkRequest{}, api.CreateBarkParams{DogID: dogID, Prefer: api.NewOptString("respond-async")})
	if err != nil {
		return err
	}
	bark, ok := barkRes.(*api.BarkNowAcceptedHeaders)
	if !ok {
		return unexpected("an asynchronous bark", barkRes)
	}
	task, status := bark.Response, http.StatusAccepted
	for i := 0; i < 30 && task.Status != api.BarkStatusSucceeded && task.Status != api.BarkStatusFailed && task.Status != api.BarkStatusCanceled; i++ {
		got, err := c.GetBark(ctx, api.GetBarkParams{DogID: dogID, BarkID: bark.Response.ID, Prefer: api.NewOptString("wait=10")})
		if err != nil {
			return err
		}
		switch got := got.(type) {
		case *api.GetBarkOKHeaders:
			task, status = got.Response, http.StatusOK
		case *api.BarkNowAcceptedHeaders:
			task, status = got.Response, http.StatusSeeOther
		default:
			return unexpected("read the task", got)
		}
	}
	if task.Status != api.BarkStatusSucceeded || status != http.StatusSeeOther || task.ID != bark.Response.ID {
		return fmt.Errorf("the finished task: %d %+v, want 303 with the task succeeded", status, task)
	}

	carsRes, err := c.ListCars(ctx, api.ListCarsParams{Color: api.NewOptString("red")})
	if err != nil {
		return err
	}
	cars, ok := carsRes.(*api.CarPageHeaders)
	if !ok || len(cars.Response.Items) == 0 {
		return unexpected("list red cars", carsRes)
	}
	for _, car := range cars.Response.Items {
		if !strings.EqualFold(car.Color, "red") {
			return fmt.Errorf("list red cars: a %s car", car.Color)
		}
	}
	carRes, err := c.GetCar(ctx, api.GetCarParams{CarID: cars.Response.Items[0].ID})
	if err != nil {
		return err
	}
	car, ok := carRes.(*api.CarHeaders)
	if !ok {
		return unexpected("read a car", carRes)
	}

	out, err := json.Marshal(map[string]any{"dogs": list.Response.Total, "dog": dogID, "task": task.ID, "taskStatus": status,
		"redCars": cars.Response.Total, "car": car.Response.ID})
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	return nil
}

// unexpected is the error of an answer the program did not expect: its
// type names the status.
func unexpected(what string, res any) error {
	return fmt.Errorf("%s: %T %+v", what, res, res)
}
