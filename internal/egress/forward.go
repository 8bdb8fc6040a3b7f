package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// hopHeaders are the hop-by-hop headers a forward proxy drops (RFC 9110 7.6.1), and
// Proxy-Authorization, which is for the proxy alone.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// dialRefused carries why the proxy's transport did not connect.
type dialRefused struct{ reason string }

func (d dialRefused) Error() string { return d.reason }

// forward serves a plain http:// request: one request upstream, its answer back, on
// a connection of its own (no keep-alive shared between sandboxes), with no upgrade
// (a WebSocket would be a tunnel the ledger cannot see into: use wss:// via CONNECT).
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, id Identity, e Entry) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	out := r.Clone(ctx)
	out.RequestURI = ""
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	var sent, got atomic.Int64
	if r.Body != nil && r.Body != http.NoBody {
		out.Body = &countingReader{r: r.Body, n: &sent}
	}
	tr := &http.Transport{
		Proxy:             nil,
		DisableKeepAlives: true,
		// Bodies pass through as they are: the code asked for them, and inflating
		// them here would spend the proxy's memory on the code's behalf.
		DisableCompression: true,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			host, ps, _ := net.SplitHostPort(addr)
			port, _ := strconv.ParseUint(ps, 10, 16)
			if host != e.Host || uint16(port) != e.Port {
				return nil, dialRefused{ReasonNotAllowed} // only the host decided on
			}
			conn, reason := p.dial(ctx, host, uint16(port))
			if reason != "" {
				return nil, dialRefused{reason}
			}
			return conn, nil
		},
		ResponseHeaderTimeout: p.idleTimeout(),
	}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(out)
	if err != nil {
		e.Reason = ReasonUpstreamFail
		var d dialRefused
		if errors.As(err, &d) {
			e.Reason = d.reason
		}
		e.BytesOut = sent.Load()
		p.record(id, e)
		refuse(w, http.StatusBadGateway, fmt.Sprintf("%s:%d %s", e.Host, e.Port, e.Reason))
		return
	}
	defer resp.Body.Close()
	e.Allowed = true
	slot := p.record(id, e)
	for _, h := range hopHeaders {
		resp.Header.Del(h)
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	// A body that stops moving for the idle timeout is cut (the request's context
	// ends, and with it the upstream read): a slow drip holds nothing for long.
	idle := time.AfterFunc(p.idleTimeout(), cancel)
	defer idle.Stop()
	_, _ = io.Copy(w, &countingReader{r: resp.Body, n: &got, moved: func() { idle.Reset(p.idleTimeout()) }})
	if ctx.Err() != nil {
		e.Reason = ReasonIdle
	}
	e.BytesOut, e.BytesIn = sent.Load(), got.Load()
	p.update(id, slot, e)
}

type countingReader struct {
	r     io.Reader
	n     *atomic.Int64
	moved func() // if set, called when bytes came
}

func (c *countingReader) Read(b []byte) (int, error) {
	k, err := c.r.Read(b)
	c.n.Add(int64(k))
	if k > 0 && c.moved != nil {
		c.moved()
	}
	return k, err
}

func (c *countingReader) Close() error {
	if rc, ok := c.r.(io.Closer); ok {
		return rc.Close()
	}
	return nil
}
