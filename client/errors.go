package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// APIError is an error answer of the API.
type APIError struct {
	Status  int
	Code    string // invalid_argument, not_found, …
	Message string
	Field   string // the request field at fault, when one is
}

func (e *APIError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s (%d): %s: %s", e.Code, e.Status, e.Field, e.Message)
	}
	return fmt.Sprintf("%s (%d): %s", e.Code, e.Status, e.Message)
}

// Sentinels to match an *APIError by its code with errors.Is.
var (
	ErrInvalid         = errors.New("invalid_argument")
	ErrUnauthenticated = errors.New("unauthenticated")
	ErrNotFound        = errors.New("not_found")
	ErrConflict        = errors.New("conflict")
	ErrTooLarge        = errors.New("payload_too_large")
	ErrRateLimited     = errors.New("rate_limited")
	ErrQuotaExceeded   = errors.New("quota_exceeded") // a tenant quota: retry after the answer's Retry-After
	ErrUnavailable     = errors.New("unavailable")
	ErrInternal        = errors.New("internal")
)

// Is matches the sentinel of e's code.
func (e *APIError) Is(target error) bool {
	for _, s := range []error{ErrInvalid, ErrUnauthenticated, ErrNotFound, ErrConflict, ErrTooLarge, ErrRateLimited, ErrQuotaExceeded, ErrUnavailable, ErrInternal} {
		if target == s {
			return s.Error() == e.Code
		}
	}
	return false
}

func apiError(resp *http.Response) error {
	var body struct {
		Error struct{ Code, Message, Field string } `json:"error"`
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if json.Unmarshal(raw, &body) != nil || body.Error.Code == "" {
		return &APIError{Status: resp.StatusCode, Code: "internal", Message: fmt.Sprintf("unexpected answer: %.200s", raw)}
	}
	return &APIError{Status: resp.StatusCode, Code: body.Error.Code, Message: body.Error.Message, Field: body.Error.Field}
}
