package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/codeinterp/codeinterp/internal/service"
	"github.com/labstack/echo/v4"
)

// Error is an API error: every non-2xx answer is one, as
// {"error": {"code", "message", "field"}}.
type Error struct {
	Status     int    `json:"-"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	Field      string `json:"field,omitempty"`
	RetryAfter int    `json:"-"` // seconds, for rate_limited and unavailable
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", e.Code, e.Field, e.Message)
	}
	return e.Code + ": " + e.Message
}

func invalid(field, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: "invalid_argument", Field: field, Message: fmt.Sprintf(format, args...)}
}

func tooLarge(field, format string, args ...any) *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Code: "payload_too_large", Field: field, Message: fmt.Sprintf(format, args...)}
}

func notFound(what string) *Error {
	return &Error{Status: http.StatusNotFound, Code: "not_found", Message: what + " not found"}
}

var errUnauthenticated = &Error{Status: http.StatusUnauthorized, Code: "unauthenticated", Message: "missing or unknown API key: send Authorization: Bearer <key>"}

// statuses maps the service's error codes to HTTP statuses.
var statuses = map[service.Code]int{
	service.CodeInvalid:     http.StatusBadRequest,
	service.CodeTooLarge:    http.StatusRequestEntityTooLarge,
	service.CodeNotFound:    http.StatusNotFound,
	service.CodeConflict:    http.StatusConflict,
	service.CodeUnavailable: http.StatusServiceUnavailable,
	service.CodeQuota:       http.StatusTooManyRequests,
}

func fromService(e *service.Error) *Error {
	status, ok := statuses[e.Code]
	if !ok {
		status = http.StatusInternalServerError
	}
	return &Error{Status: status, Code: string(e.Code), Message: e.Message, Field: e.Field, RetryAfter: e.RetryAfter}
}

// codes maps the statuses echo produces itself to API codes.
var codes = map[int]string{
	http.StatusBadRequest:            "invalid_argument",
	http.StatusUnauthorized:          "unauthenticated",
	http.StatusNotFound:              "not_found",
	http.StatusMethodNotAllowed:      "invalid_argument",
	http.StatusRequestEntityTooLarge: "payload_too_large",
	http.StatusUnsupportedMediaType:  "invalid_argument",
	http.StatusTooManyRequests:       "rate_limited",
	http.StatusServiceUnavailable:    "unavailable",
}

// errorHandler turns every error a handler returns into the API's error body, and
// logs the ones that are the service's fault.
func errorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		var apiErr *Error
		var svcErr *service.Error
		var httpErr *echo.HTTPError
		switch {
		case errors.As(err, &apiErr):
		case errors.As(err, &svcErr):
			apiErr = fromService(svcErr)
		case errors.As(err, &httpErr):
			code, ok := codes[httpErr.Code]
			if !ok {
				code = "internal"
			}
			apiErr = &Error{Status: httpErr.Code, Code: code, Message: strconv.Itoa(httpErr.Code) + " " + http.StatusText(httpErr.Code)}
			if msg, ok := httpErr.Message.(string); ok && httpErr.Code != http.StatusInternalServerError {
				apiErr.Message = msg
			}
		case service.Outage(err) != nil:
			// Redis is down, restarting, loading its data or full: retry later.
			apiErr = fromService(service.Outage(err))
		default:
			// The error's words may name internal hosts and stores: they are logged
			// under the request id, which is all the client is told.
			apiErr = &Error{Status: http.StatusInternalServerError, Code: "internal",
				Message: "internal error (request id " + c.Response().Header().Get(echo.HeaderXRequestID) + ", also in the X-Request-Id header); the operator's logs have the details"}
		}
		if apiErr.Status >= 500 {
			log.Error("request failed", "method", c.Request().Method, "path", c.Path(),
				"request_id", c.Response().Header().Get(echo.HeaderXRequestID), "err", err)
		}
		if apiErr.RetryAfter > 0 {
			c.Response().Header().Set("Retry-After", strconv.Itoa(apiErr.RetryAfter))
		}
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(apiErr.Status)
			return
		}
		_ = c.JSON(apiErr.Status, map[string]*Error{"error": apiErr})
	}
}
