// Package client is the Go client of the codeinterp HTTP API: run code, wait for it or
// stream it, upload inputs, download outputs, manage threads. Errors the API answers
// are *APIError values, matched with errors.Is against ErrNotFound and friends.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client talks to one codeinterp API with one API key. It is safe for concurrent use.
type Client struct {
	base string
	key  string
	http *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the client use h (for timeouts, proxies, tests).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// New returns a client of the API at baseURL (e.g. "http://localhost:8080").
func New(baseURL, apiKey string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), key: apiKey, http: http.DefaultClient}
	for _, o := range opts {
		o(c)
	}
	return c
}

// do sends a request and decodes a JSON answer into out (if not nil). Non-2xx answers
// become *APIError.
func (c *Client) do(ctx context.Context, method, path string, header http.Header, body io.Reader, out any) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 && !(resp.StatusCode == http.StatusFound && out == nil) {
		defer resp.Body.Close()
		return nil, apiError(resp)
	}
	if out == nil {
		return resp, nil
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return nil, fmt.Errorf("decode %s %s: %w", method, path, err)
	}
	return resp, nil
}

func (c *Client) doJSON(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	h := http.Header{}
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
		h.Set("Content-Type", "application/json")
	}
	_, err := c.do(ctx, method, path, h, body, out)
	return err
}

// Submit queues code to run and returns the execution as accepted (status queued).
func (c *Client) Submit(ctx context.Context, req RunRequest) (*Execution, error) {
	h := http.Header{"Content-Type": {"application/json"}}
	if req.IdempotencyKey != "" {
		h.Set("Idempotency-Key", req.IdempotencyKey)
	}
	b, err := json.Marshal(req.body())
	if err != nil {
		return nil, err
	}
	var ex Execution
	if _, err := c.do(ctx, http.MethodPost, "/v1/executions", h, bytes.NewReader(b), &ex); err != nil {
		return nil, err
	}
	return &ex, nil
}

// Get returns an execution; with wait > 0 the API holds the answer until the execution
// ends or wait passes (at most 60 s).
func (c *Client) Get(ctx context.Context, id string, wait time.Duration) (*Execution, error) {
	path := "/v1/executions/" + url.PathEscape(id)
	if wait > 0 {
		path += "?wait=" + wait.Round(time.Millisecond).String()
	}
	var ex Execution
	return &ex, c.doJSON(ctx, http.MethodGet, path, nil, &ex)
}

// Wait long-polls until the execution ends or ctx does.
func (c *Client) Wait(ctx context.Context, id string) (*Execution, error) {
	for {
		ex, err := c.Get(ctx, id, 60*time.Second)
		if err != nil || ex.Done() {
			return ex, err
		}
	}
}

// Run submits code and waits for it to end.
func (c *Client) Run(ctx context.Context, req RunRequest) (*Execution, error) {
	ex, err := c.Submit(ctx, req)
	if err != nil {
		return nil, err
	}
	return c.Wait(ctx, ex.ID)
}

// Cancel cancels an execution and returns it as it stands.
func (c *Client) Cancel(ctx context.Context, id string) (*Execution, error) {
	var ex Execution
	return &ex, c.doJSON(ctx, http.MethodPost, "/v1/executions/"+url.PathEscape(id)+"/cancel", nil, &ex)
}

// List returns a page of executions, newest first.
func (c *Client) List(ctx context.Context, opt ListOptions) (*Page, error) {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("thread_id", opt.ThreadID)
	set("status", opt.Status)
	set("cursor", opt.Cursor)
	if opt.Limit > 0 {
		q.Set("limit", fmt.Sprint(opt.Limit))
	}
	var p Page
	return &p, c.doJSON(ctx, http.MethodGet, "/v1/executions?"+q.Encode(), nil, &p)
}
