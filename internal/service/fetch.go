package service

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/codeinterp/codeinterp/internal/netguard"
	"github.com/codeinterp/codeinterp/storage"
)

// Fetch is how the API downloads input files given by URL.
type Fetch struct {
	// Guard is the egress guard of fetches: its own allow-list
	// (CODEINTERP_FETCH_ALLOW, _FETCH_PORTS), not the webhooks', so an internal
	// webhook receiver is not readable by every tenant.
	Guard netguard.Guard
	// MaxFiles bounds the files one request names by URL; default 16.
	MaxFiles int
	// Timeout bounds the fetching of all the URL files of one request, bodies
	// included; default 60s.
	Timeout time.Duration
}

// maxURLBytes bounds an input file's URL.
const maxURLBytes = 2048

// checkInputURL refuses, before any connection, a URL the service will not fetch: not
// http(s), too long, with credentials, or naming an internal address.
func (s *Service) checkInputURL(field, raw string) (*url.URL, error) {
	if len(raw) > maxURLBytes {
		return nil, Invalid(field, "is longer than %d bytes", maxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, Invalid(field, "want an absolute http:// or https:// URL")
	}
	if u.User != nil {
		return nil, Invalid(field, "must not carry credentials")
	}
	if err := s.cfg.Fetch.Guard.CheckURL(u); err != nil {
		return nil, Invalid(field, "%s", forbiddenMessage)
	}
	return u, nil
}

const forbiddenMessage = "points to a loopback, private, link-local or otherwise internal address, or a port the service may not use"

// openURL starts downloading an input file the client named by URL, through the
// fetches' egress guard: every address is checked after DNS (no loopback, private or
// metadata addresses, no rebinding), redirects are not followed, no proxy is used
// and no compression is accepted (a body is stored as it comes, never inflated). A
// body longer than limit fails its Read with a [TooLarge] error naming field. It
// returns the body and its declared length (-1: none); the caller closes the body,
// whose reads end with ctx.
func (s *Service) openURL(ctx context.Context, field, raw string, limit int64) (*fetchedBody, int64, error) {
	u, err := s.checkInputURL(field, raw)
	if err != nil {
		return nil, 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, 0, Invalid(field, "want an absolute http:// or https:// URL")
	}
	req.Header.Set("User-Agent", "codeinterp (input file)")
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := s.fetcher.Do(req)
	if err != nil {
		if errors.Is(err, netguard.ErrForbiddenTarget) {
			return nil, 0, Invalid(field, "%s", forbiddenMessage)
		}
		if ctx.Err() != nil {
			return nil, 0, s.fetchCanceled(ctx, field)
		}
		// Generic, like webhook errors: the dial error would make the service a port
		// scanner of whatever the guard lets through.
		return nil, 0, Invalid(field, "could not be fetched: the connection failed or timed out")
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		resp.Body.Close()
		msg := ""
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			msg = " (redirects are not followed: give the final URL)"
		}
		return nil, 0, Invalid(field, "could not be fetched: the server answered %s%s", resp.Status, msg)
	}
	if ce := strings.TrimSpace(resp.Header.Get("Content-Encoding")); ce != "" && !strings.EqualFold(ce, "identity") {
		resp.Body.Close()
		return nil, 0, Invalid(field, "is served with Content-Encoding %q: the service takes files as they are, uncompressed (serve a .gz file as such and unpack it in the code)", clip(ce, 32))
	}
	if resp.ContentLength > limit {
		resp.Body.Close()
		return nil, 0, TooLarge(field, "is %d bytes; the limit is %d, what the workspace has room for", resp.ContentLength, limit)
	}
	return &fetchedBody{r: resp.Body, left: limit, field: field, limit: limit}, resp.ContentLength, nil
}

// fetchCanceled is the error of a fetch whose context ended: the request's own
// deadline for its URL files, or the client gone.
func (s *Service) fetchCanceled(ctx context.Context, field string) error {
	if errors.Is(context.Cause(ctx), errFetchDeadline) {
		return Invalid(field, "could not be fetched within %s, the time all of a request's files given by URL have", s.cfg.Fetch.Timeout)
	}
	return ctx.Err()
}

// errFetchDeadline is the cause of a request's fetch deadline.
var errFetchDeadline = errors.New("the request's files given by URL took too long")

// withFetchDeadline bounds the fetches of one request, all its URL files together.
func (s *Service) withFetchDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, s.cfg.Fetch.Timeout, errFetchDeadline)
}

// fetchTo downloads an input file given by URL into storage under key, streaming: at
// most limit bytes, and never more at once in memory than the process's budget of
// bodies grants (503 when it has none left). Errors name field.
func (s *Service) fetchTo(ctx context.Context, field, raw string, limit int64, key string) (storage.Object, error) {
	body, size, err := s.openURL(ctx, field, raw, limit)
	if err != nil {
		return storage.Object{}, err
	}
	defer body.Close()
	metered := s.cfg.Bodies.Meter(body, limit)
	defer metered.Release()
	if err := metered.Prefill(size); err != nil {
		return storage.Object{}, err
	}
	obj, err := s.cfg.Store.Put(ctx, key, metered, size, "")
	var se *Error
	switch {
	case err == nil:
		return obj, nil
	case errors.As(err, &se): // over the limit, or over the budget
		return storage.Object{}, se
	case ctx.Err() != nil:
		return storage.Object{}, s.fetchCanceled(ctx, field)
	case body.err != nil:
		return storage.Object{}, Invalid(field, "could not be fetched: the transfer failed or timed out")
	}
	return storage.Object{}, err // storage's own failure
}

// fetchedBody is a response body that fails past its limit, instead of truncating,
// and remembers how its transfer failed (to tell it from a failure of storage).
type fetchedBody struct {
	r     io.ReadCloser
	left  int64
	field string
	limit int64
	err   error
}

func (b *fetchedBody) Read(p []byte) (int, error) {
	n, err := b.read(p)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

func (b *fetchedBody) read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var one [1]byte
		if n, _ := b.r.Read(one[:]); n > 0 {
			return 0, TooLarge(b.field, "is over the limit of %d bytes, what the workspace has room for", b.limit)
		}
		return b.r.Read(p)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *fetchedBody) Close() error { return b.r.Close() }

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
