package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Upload stores a file once; reference it from executions as InputFile{Object: …}.
func (c *Client) Upload(ctx context.Context, name string, r io.Reader) (*Upload, error) {
	var u Upload
	h := http.Header{"Content-Type": {"application/octet-stream"}}
	_, err := c.do(ctx, http.MethodPost, "/v1/files?name="+url.QueryEscape(name), h, r, &u)
	return &u, err
}

// Download writes the file at a presigned URL (File.URL) to w.
func (c *Client) Download(ctx context.Context, fileURL string, w io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fileURL, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("download: HTTP %d (links expire: fetch the execution again for fresh ones)", resp.StatusCode)
	}
	_, err = io.Copy(w, resp.Body)
	return err
}

// Thread returns a thread.
func (c *Client) Thread(ctx context.Context, id string) (*Thread, error) {
	var t Thread
	return &t, c.doJSON(ctx, http.MethodGet, "/v1/threads/"+url.PathEscape(id), nil, &t)
}

// Threads lists the tenant's threads, most recently active first.
func (c *Client) Threads(ctx context.Context) ([]ThreadSummary, error) {
	var out struct {
		Items []ThreadSummary `json:"items"`
	}
	return out.Items, c.doJSON(ctx, http.MethodGet, "/v1/threads", nil, &out)
}

// DeleteThread removes a thread's sandbox and workspace, canceling what is queued.
func (c *Client) DeleteThread(ctx context.Context, id string) error {
	resp, err := c.do(ctx, http.MethodDelete, "/v1/threads/"+url.PathEscape(id), nil, nil, nil)
	if err == nil {
		resp.Body.Close()
	}
	return err
}

// PutFile puts a file into a thread's workspace, in order with its executions.
func (c *Client) PutFile(ctx context.Context, thread, path string, r io.Reader) (*StoredFile, error) {
	var f StoredFile
	h := http.Header{"Content-Type": {"application/octet-stream"}}
	_, err := c.do(ctx, http.MethodPut, "/v1/threads/"+url.PathEscape(thread)+"/files/"+escapePath(path), h, r, &f)
	return &f, err
}

// GetFile writes a file of a thread's workspace to w.
func (c *Client) GetFile(ctx context.Context, thread, path string, w io.Writer) error {
	resp, err := c.do(ctx, http.MethodGet, "/v1/threads/"+url.PathEscape(thread)+"/files/"+escapePath(path)+"?inline=1", nil, nil, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return err
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}
