package egress

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// tunnel serves a CONNECT: it connects upstream first (so a refusal is still an
// HTTP answer the code's client can show), answers 200, reads the TLS ClientHello
// and checks its server name against the CONNECT host, then passes bytes both ways
// untouched: the proxy never sees inside the TLS session.
func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request, id Identity, e Entry) {
	upstream, reason := p.dial(r.Context(), e.Host, e.Port)
	if reason != "" {
		e.Reason = reason
		p.record(id, e)
		refuse(w, http.StatusBadGateway, fmt.Sprintf("%s:%d %s", e.Host, e.Port, reason))
		return
	}
	defer upstream.Close()
	hj, ok := w.(http.Hijacker)
	if !ok {
		e.Reason = ReasonBadRequest
		p.record(id, e)
		refuse(w, http.StatusInternalServerError, "cannot tunnel on this connection")
		return
	}
	client, rw, err := hj.Hijack()
	if err != nil {
		e.Reason = ReasonBadRequest
		p.record(id, e)
		return
	}
	defer client.Close()
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}

	_ = client.SetReadDeadline(time.Now().Add(p.helloTimeout()))
	hello, sni, err := readHello(r.Context(), rw.Reader)
	if err != nil {
		e.Reason = ReasonNotTLS
		p.record(id, e)
		return
	}
	if sni != e.Host {
		e.Reason = fmt.Sprintf("%s (%q)", ReasonSNI, sni)
		p.record(id, e)
		return
	}
	e.Allowed = true
	slot := p.record(id, e)
	defer func() { p.update(id, slot, e) }()
	if _, err := upstream.Write(hello); err != nil {
		e.Reason = ReasonUpstreamFail
		return
	}
	e.BytesOut = int64(len(hello))
	var out, in atomic.Int64
	splice(client, rw.Reader, upstream, p.idleTimeout(), &out, &in)
	e.BytesOut += out.Load()
	e.BytesIn = in.Load()
}

// errHello stops the TLS server handshake readHello starts once the ClientHello is
// read: the proxy only wants its server name.
var errHello = errors.New("client hello read")

// readHello reads a TLS ClientHello from r and returns every byte read (to be sent
// upstream as they came) and the server name it asks for. crypto/tls parses it:
// a server handshake that stops at the hello, over a connection that records what
// it reads and discards what the server would write.
func readHello(ctx context.Context, r io.Reader) ([]byte, string, error) {
	rc := &recordingConn{r: r}
	var sni string
	err := tls.Server(rc, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		sni = h.ServerName
		return nil, errHello
	}}).HandshakeContext(ctx)
	if !errors.Is(err, errHello) {
		return nil, "", fmt.Errorf("not a TLS client hello: %v", err)
	}
	return rc.read.Bytes(), sni, nil
}

// recordingConn is the connection readHello's handshake runs on.
type recordingConn struct {
	net.Conn // nil: only Read, Write and the deadlines are used
	r        io.Reader
	read     bytes.Buffer
}

func (c *recordingConn) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.read.Write(b[:n])
	return n, err
}
func (c *recordingConn) Write(b []byte) (int, error)      { return len(b), nil }
func (c *recordingConn) SetDeadline(time.Time) error      { return nil }
func (c *recordingConn) SetReadDeadline(time.Time) error  { return nil }
func (c *recordingConn) SetWriteDeadline(time.Time) error { return nil }
func (c *recordingConn) Close() error                     { return nil }

// splice copies client→upstream (reading clientR, the hijacked connection's buffered
// reader) and upstream→client until both directions end or neither moved a byte
// for idle, counting the bytes each way.
func splice(client net.Conn, clientR io.Reader, upstream net.Conn, idle time.Duration, out, in *atomic.Int64) {
	var last atomic.Int64 // unix nanoseconds of the last byte either way
	last.Store(time.Now().UnixNano())
	done := make(chan struct{}, 2)
	copyDir := func(dst net.Conn, src net.Conn, r io.Reader, n *atomic.Int64) {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 32<<10)
		for {
			_ = src.SetReadDeadline(time.Now().Add(idle))
			k, err := r.Read(buf)
			if k > 0 {
				last.Store(time.Now().UnixNano())
				_ = dst.SetWriteDeadline(time.Now().Add(idle))
				if _, werr := dst.Write(buf[:k]); werr != nil {
					closeBoth(client, upstream)
					return
				}
				n.Add(int64(k))
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && time.Since(time.Unix(0, last.Load())) < idle {
				continue // quiet this way while the other way moves: not idle
			}
			if err != nil {
				if tcp, ok := dst.(interface{ CloseWrite() error }); ok && errors.Is(err, io.EOF) {
					_ = tcp.CloseWrite() // pass the half-close on; the other way may go on
				} else {
					closeBoth(client, upstream)
				}
				return
			}
		}
	}
	go copyDir(upstream, client, clientR, out)
	go copyDir(client, upstream, upstream, in)
	<-done
	<-done
}

func closeBoth(a, b net.Conn) {
	_ = a.Close()
	_ = b.Close()
}
