package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codeinterp/codeinterp/internal/service"
)

// A session is memory of this process and a thread, and opening one is a request
// without a session id, which the SDK serves for anyone with a key: unbounded, a
// loop of initialize makes millions an hour. So opening one takes one of the
// tenant's submissions per second (the rate quota, shared by the API replicas), and
// a tenant has at most its mcp_sessions quota open in this process; a session frees
// its slot when it closes (DELETE /mcp, its idle timeout, the process's shutdown).

// sessionCounts counts the sessions each tenant has open in this process.
type sessionCounts struct {
	mu    sync.Mutex
	open  map[string]int  // tenant → sessions open
	ids   map[string]bool // the sessions counted
	limit func(tenant string) int
}

func newSessionCounts(limit func(string) int) *sessionCounts {
	return &sessionCounts{open: map[string]int{}, ids: map[string]bool{}, limit: limit}
}

// take counts session id against tenant's quota; it reports the sessions the tenant
// has open and false if the quota is used up. A session counted already is not
// counted again.
func (c *sessionCounts) take(tenant, id string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.open[tenant]
	if c.ids[id] {
		return n, true
	}
	if l := c.limit(tenant); l > 0 && n >= l {
		return n, false
	}
	c.open[tenant], c.ids[id] = n+1, true
	return n + 1, true
}

// give frees the slot of session id.
func (c *sessionCounts) give(tenant, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ids[id] {
		return
	}
	delete(c.ids, id)
	if c.open[tenant]--; c.open[tenant] <= 0 {
		delete(c.open, tenant)
	}
}

// each calls fn with each tenant's open sessions.
func (c *sessionCounts) each(fn func(tenant string, n int)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, n := range c.open {
		fn(t, n)
	}
}

// countSessions is a receiving middleware: an initialize opens its session, which
// counts against its tenant's quota until it closes. One past the quota is refused
// with a JSON-RPC error the client shows (the SDK then drops the session).
func (s *server) countSessions(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ir, ok := req.(*mcp.ServerRequest[*mcp.InitializeParams])
		if method != "initialize" || !ok || ir.Session == nil || ir.Session.ID() == "" {
			return next(ctx, method, req)
		}
		tenant, err := tenantOf(ir.Extra)
		if err != nil {
			return nil, err
		}
		ss, id := ir.Session, ir.Session.ID()
		n, ok := s.sessions.take(tenant, id)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(
				"quota_exceeded: the tenant has %d MCP sessions open on this server, its mcp_sessions quota (CODEINTERP_QUOTA_MCP_SESSIONS); close one (DELETE /mcp with its Mcp-Session-Id) or wait for one to idle out", n)}
		}
		res, err := next(ctx, method, req)
		if err != nil {
			s.sessions.give(tenant, id)
			return res, err
		}
		go func() {
			_ = ss.Wait()
			s.sessions.give(tenant, id)
		}()
		return res, nil
	}
}

// peekBytes is how much of a request without a session id is read to tell an
// initialize: one is a few hundred bytes.
const peekBytes = 64 << 10

// admitSessions charges each initialize (a POST without a session id opening one) to
// the tenant's rate quota: past it, 429 with Retry-After and a JSON-RPC error naming
// the quota. A body that does not read as one JSON-RPC message is charged too; other
// messages (a client's server/discover probe, say) are not: they leave no session.
func (s *server) admitSessions(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ti := auth.TokenInfoFromContext(r.Context())
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" || ti == nil || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		head, err := io.ReadAll(io.LimitReader(r.Body, peekBytes))
		if err != nil {
			http.Error(w, "cannot read the request", http.StatusBadRequest)
			return
		}
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
		var id jsonrpc.ID
		msg, err := jsonrpc.DecodeMessage(head)
		if req, ok := msg.(*jsonrpc.Request); err == nil && (!ok || req.Method != "initialize") {
			next.ServeHTTP(w, r)
			return
		} else if ok {
			id = req.ID
		}
		err = s.svc.Admit(r.Context(), ti.UserID)
		if err == nil {
			next.ServeHTTP(w, r)
			return
		}
		status, text, retry := http.StatusInternalServerError, "internal error", 0
		var se *service.Error
		switch {
		case errors.As(err, &se) && se.Code == service.CodeQuota:
			status, text, retry = http.StatusTooManyRequests, se.Error()+" (opening an MCP session counts as a submission)", se.RetryAfter
		case errors.As(err, &se):
			status, text, retry = http.StatusServiceUnavailable, se.Error(), se.RetryAfter
		default:
			s.log.Error("mcp: admit a session", "tenant", ti.UserID, "err", err)
		}
		if retry > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(retry))
		}
		body, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: text}})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	})
}
