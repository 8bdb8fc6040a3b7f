package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpBridge is `codeinterp mcp`: it speaks MCP on in and out (stdio) and relays every
// message, unchanged, to and from the service's Streamable HTTP endpoint (/mcp) with
// the API key, for agent hosts that launch MCP servers as processes. The process is
// one MCP session: state persists across its calls. The key goes to the service's
// origin only (a redirect elsewhere is not followed). Progress notifications and
// cancellations pass through like any message. A message the service refuses (a
// wrong key, the service down) is answered with a JSON-RPC error saying why. It
// ends when in does.
func mcpBridge(ctx context.Context, baseURL, key string, in io.ReadCloser, out io.WriteCloser, logw io.Writer) error {
	endpoint := strings.TrimRight(baseURL, "/") + "/mcp"
	home, err := url.Parse(endpoint)
	if err != nil {
		return fmt.Errorf("%w: CODEINTERP_URL %q: %v", errUsage, baseURL, err)
	}
	remote, err := (&mcp.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: homeClient(home, key),
		// Responses and progress come on each call's own stream; the session's
		// standalone stream would only carry list-changed notifications.
		DisableStandaloneSSE: true,
	}).Connect(ctx)
	if err != nil {
		return err
	}
	defer remote.Close()
	local, err := (&mcp.IOTransport{Reader: in, Writer: out}).Connect(ctx)
	if err != nil {
		return err
	}
	defer local.Close()
	go func() {
		for {
			msg, err := remote.Read(ctx)
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, mcp.ErrConnectionClosed) && !errors.Is(err, io.EOF) {
					fmt.Fprintln(logw, "codeinterp mcp:", err)
				}
				return
			}
			if err := local.Write(ctx, msg); err != nil {
				return
			}
		}
	}()
	for {
		msg, err := local.Read(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) || ctx.Err() != nil {
				return nil
			}
			return err
		}
		// Each message is its own POST, which returns once the service starts its
		// answer: one that waits (a call with no progress to report) must not hold
		// back the next, such as the cancellation of another call.
		go relay(ctx, remote, local, msg, logw)
	}
}

// relay sends msg to the service; a call the service does not take is answered
// with the reason.
func relay(ctx context.Context, remote, local mcp.Connection, msg jsonrpc.Message, logw io.Writer) {
	err := remote.Write(ctx, msg)
	if err == nil {
		return
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		fmt.Fprintln(logw, "codeinterp mcp:", err)
		return
	}
	if err := local.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: refusal(err)}); err != nil {
		fmt.Fprintln(logw, "codeinterp mcp:", err)
	}
}

// codeRejected is the SDK's error for a message its transport did not send, which
// does not say why: the error it wraps does.
const codeRejected = -32005

// refusal is the error to answer a call the service did not take: its own JSON-RPC
// error if it sent one, else what went wrong on the way.
func refusal(err error) *jsonrpc.Error {
	var wire *jsonrpc.Error
	if errors.As(err, &wire) && wire.Code != codeRejected {
		return wire
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "codeinterp: " + err.Error()}
}

// homeClient is the bridge's HTTP client: the API key goes to the service's origin
// (scheme, host and port of home) and nowhere else, and a redirect to another origin
// is not followed: the session's messages, code and files included, would go too.
func homeClient(home *url.URL, key string) *http.Client {
	return &http.Client{
		Transport: bearer{key: key, home: home, next: http.DefaultTransport},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if !sameOrigin(req.URL, home) {
				return fmt.Errorf("the service redirected to %s, another host than %s: not followed", req.URL.Redacted(), home.Host)
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		},
	}
}

// bearer adds the API key to every request to home's origin.
type bearer struct {
	key  string
	home *url.URL
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if sameOrigin(r.URL, b.home) {
		r.Header.Set("Authorization", "Bearer "+b.key)
	} else {
		r.Header.Del("Authorization")
	}
	return b.next.RoundTrip(r)
}

// sameOrigin reports whether a and b have the same scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		return map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

func runMCP(ctx context.Context, baseURL, key string, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: mcp takes no arguments", errUsage)
	}
	if key == "" {
		return fmt.Errorf("%w: mcp needs an API key (--api-key or CODEINTERP_API_KEY)", errUsage)
	}
	return mcpBridge(ctx, baseURL, key, os.Stdin, os.Stdout, os.Stderr)
}
