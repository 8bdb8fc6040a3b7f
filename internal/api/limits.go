package api

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/sync/semaphore"
)

// streams counts the long-lived requests (event streams, long-polls, waited-for
// thread operations) each tenant holds open on this API process, so one tenant cannot
// take every connection: past its quota it gets 429; past the process's total, 503.
type streams struct {
	perTenant func(tenant string) int // 0: no limit
	total     *semaphore.Weighted

	mu   sync.Mutex
	open map[string]int
}

func newStreams(total int, perTenant func(string) int) *streams {
	return &streams{perTenant: perTenant, total: semaphore.NewWeighted(int64(max(total, 1))), open: map[string]int{}}
}

// acquire takes a stream slot for tenant, or returns the error to answer.
func (s *streams) acquire(tenant string) (release func(), err error) {
	s.mu.Lock()
	limit := s.perTenant(tenant)
	if limit > 0 && s.open[tenant] >= limit {
		s.mu.Unlock()
		return nil, &Error{Status: http.StatusTooManyRequests, Code: "quota_exceeded", RetryAfter: 1,
			Message: "the tenant holds " + strconv.Itoa(limit) + " event streams and long-polls open on this server, its quota: close one or retry later"}
	}
	if !s.total.TryAcquire(1) {
		s.mu.Unlock()
		return nil, &Error{Status: http.StatusServiceUnavailable, Code: "unavailable", RetryAfter: 1,
			Message: "this server holds as many event streams and long-polls as it can; retry"}
	}
	s.open[tenant]++
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			if s.open[tenant]--; s.open[tenant] == 0 {
				delete(s.open, tenant)
			}
			s.mu.Unlock()
			s.total.Release(1)
		})
	}, nil
}

// longLived marks a route that holds its connection: it counts against the tenant's
// streams, and the server's write timeout does not cut it (the handler keeps its own
// deadline).
func (s *Server) longLived(always bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !always && c.QueryParam("wait") == "" {
				return next(c)
			}
			release, err := s.streams.acquire(tenantOf(c))
			if err != nil {
				return err
			}
			defer release()
			// Clears the server's write deadline for this response; handlers bound
			// their own time (60 s at most for waits, keep-alives for streams).
			_ = http.NewResponseController(c.Response().Writer).SetWriteDeadline(noDeadline)
			return next(c)
		}
	}
}

// budgeted bounds the bytes of request bodies held at once on this process, with the
// service's budget (which input files fetched by URL share): a body of known length
// reserves it before it is read, and one that does not fit is refused with 503
// rather than read, so a burst of large requests cannot exhaust memory. A body of
// unknown length (chunked) reserves as it arrives, up to max; when the budget runs
// out mid-body the request fails with the same 503. whole reserves max at once for a
// body of unknown length instead, for a handler that could not tell that failure
// from a bad body (the MCP SDK's).
func (s *Server) budgeted(max int64, whole bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			n := req.ContentLength
			if n < 0 && !whole {
				m := s.bodies.Meter(req.Body, max)
				defer m.Release()
				req.Body = m
				return next(c)
			}
			if n < 0 || n > max {
				n = max // unknown length: it may use all it is allowed
			}
			if err := s.bodies.Reserve(n); err != nil {
				return err
			}
			defer s.bodies.Release(n)
			return next(c)
		}
	}
}

// noDeadline clears a connection deadline.
var noDeadline time.Time

// openOf returns how many long-lived requests tenant holds open here.
func (s *streams) openOf(tenant string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open[tenant]
}
