package testenv

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/codeinterp/codeinterp/internal/api"
)

// OpenAPIClient returns an HTTP client that checks every response of the API at base
// against internal/api/openapi.json, failing the test on a mismatch. Tests that talk
// to the API through it keep the document from drifting from the code.
func OpenAPIClient(t testing.TB, base string) *http.Client {
	return &http.Client{Transport: newValidator(t, base)}
}

// validator is an http.RoundTripper that validates responses against the document.
type validator struct {
	t      testing.TB
	base   string
	router routers.Router
}

func newValidator(t testing.TB, base string) *validator {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI)
	if err != nil {
		t.Fatalf("load openapi.json: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI document: %v", err)
	}
	doc.Servers = openapi3.Servers{{URL: base}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &validator{t: t, base: base, router: router}
}

func (v *validator) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || !strings.HasPrefix(req.URL.String(), v.base) {
		return resp, err
	}
	route, params, ferr := v.router.FindRoute(req)
	if ferr != nil {
		// OpenAPI path parameters cannot hold "/": nested thread file paths match no
		// route. An unknown path is fine if it is answered 404.
		if !strings.Contains(req.URL.Path, "/files/") && resp.StatusCode != http.StatusNotFound {
			v.t.Errorf("%s %s is not in openapi.json: %v", req.Method, req.URL.Path, ferr)
		}
		return resp, nil
	}
	stream := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	var body []byte
	if !stream {
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{ExcludeResponseBody: stream, IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(req.Context(), in); err != nil {
		v.t.Errorf("response to %s %s (%d) does not match openapi.json: %v\n%s", req.Method, req.URL.Path, resp.StatusCode, err, body)
	}
	return resp, nil
}
