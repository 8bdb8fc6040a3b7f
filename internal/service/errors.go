package service

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/jobs/quota"
)

// Code classifies a failure the client caused (or may retry).
type Code string

// Error codes, as the API's error bodies carry them.
const (
	CodeInvalid     Code = "invalid_argument"
	CodeTooLarge    Code = "payload_too_large"
	CodeNotFound    Code = "not_found"
	CodeConflict    Code = "conflict"
	CodeUnavailable Code = "unavailable"
	CodeQuota       Code = "quota_exceeded"
)

// Error is a failure of a request, not of the service: a bad field, a missing
// resource, a conflict, or a moment when the request cannot be served.
type Error struct {
	Code       Code
	Field      string // the request field at fault, as the client named it
	Message    string
	RetryAfter int // seconds, for CodeUnavailable
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", e.Code, e.Field, e.Message)
	}
	return string(e.Code) + ": " + e.Message
}

// Invalid reports a bad field.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Code: CodeInvalid, Field: field, Message: fmt.Sprintf(format, args...)}
}

// TooLarge reports a field or body over its limit.
func TooLarge(field, format string, args ...any) *Error {
	return &Error{Code: CodeTooLarge, Field: field, Message: fmt.Sprintf(format, args...)}
}

// NotFound reports that what names the tenant's resource that does not exist.
func NotFound(what string) *Error {
	return &Error{Code: CodeNotFound, Message: what + " not found"}
}

// QuotaExceeded reports a tenant's quota the request would pass; field names the
// request field that counts against it, if any.
func QuotaExceeded(e *quota.Exceeded, field string) *Error {
	return &Error{Code: CodeQuota, Field: field, RetryAfter: max(e.RetryAfter, 1),
		Message: fmt.Sprintf("the tenant's %s quota (%g) is used up; retry after %d s", quotaNames[e.Quota], e.Limit, max(e.RetryAfter, 1))}
}

// quotaNames says what each quota counts, for error messages.
var quotaNames = map[string]string{
	"rate":             "submissions-per-second",
	"active":           "queued-or-running executions",
	"thread_queue":     "executions-queued-on-one-thread",
	"streams":          "open event streams and long-polls",
	"upload_bytes_day": "upload bytes per day",
	"stored_bytes_day": "stored output bytes per day",
	"skill_bytes":      "bytes of skills held",
}

// asQuota turns a *quota.Exceeded into an *Error with field; other errors pass.
func asQuota(err error, field string) error {
	var e *quota.Exceeded
	if errors.As(err, &e) {
		return QuotaExceeded(e, field)
	}
	return err
}

// Unavailable reports a request that cannot be served now; the client may retry.
func Unavailable(format string, args ...any) *Error {
	return &Error{Code: CodeUnavailable, Message: fmt.Sprintf(format, args...), RetryAfter: 1}
}

// Outage returns err as an Unavailable *Error when it says that Redis, which every
// request's state lives in, cannot serve now: it is down or restarting (a refused,
// reset or timed-out connection), loading its data after a restart (LOADING), in a
// failover (READONLY, MASTERDOWN, TRYAGAIN, CLUSTERDOWN), out of connections, or full
// (OOM: maxmemory with noeviction, as shipped). It returns nil for any other error.
// The API answers these 503 with Retry-After: the client may retry (with the same
// Idempotency-Key, a retry never submits twice).
func Outage(err error) *Error {
	var (
		op *net.OpError
		ne net.Error
	)
	switch {
	case err == nil:
		return nil
	case redis.IsLoadingError(err):
		return &Error{Code: CodeUnavailable, RetryAfter: 5,
			Message: "the service's record store is loading its data after a restart; retry shortly"}
	case redis.IsOOMError(err):
		return &Error{Code: CodeUnavailable, RetryAfter: 5,
			Message: "the service's record store is full; retry later"}
	case redis.IsReadOnlyError(err), redis.IsMasterDownError(err), redis.IsTryAgainError(err),
		redis.IsClusterDownError(err), redis.IsMaxClientsError(err),
		errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrClosed),
		errors.As(err, &op), errors.As(err, &ne) && ne.Timeout(),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		// The error may name internal addresses: it is logged, not shown.
		return &Error{Code: CodeUnavailable, RetryAfter: 2,
			Message: "a store the service needs is unreachable; retry shortly"}
	}
	return nil
}
