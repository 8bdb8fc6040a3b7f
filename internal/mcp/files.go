package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codeinterp/codeinterp/internal/service"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/storage"
)

type uploadInput struct {
	Name          string `json:"name" jsonschema:"Where to put the file, relative to the working directory, e.g. data.csv."`
	ContentBase64 string `json:"content_base64,omitempty" jsonschema:"The file's bytes, base64-encoded."`
	URL           string `json:"url,omitempty" jsonschema:"Instead of content_base64: a public http(s) URL the service downloads the file from (no redirects; internal addresses are refused)."`
	ThreadID      string `json:"thread_id,omitempty" jsonschema:"The thread to put it in; leave it out for this session's thread."`
}

type uploaded struct {
	ThreadID string `json:"thread_id"`
	Name     string `json:"name"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
	URI      string `json:"uri" jsonschema:"The file as an MCP resource."`
}

type listInput struct {
	Path       string `json:"path,omitempty" jsonschema:"Only files under this directory of the workspace, e.g. outputs."`
	MaxEntries int    `json:"max_entries,omitempty" jsonschema:"At most this many entries (default 100, at most 1000)."`
	ThreadID   string `json:"thread_id,omitempty" jsonschema:"The thread to list; leave it out for this session's thread."`
}

type listing struct {
	ThreadID  string      `json:"thread_id"`
	Files     []fileEntry `json:"files"`
	Truncated bool        `json:"truncated" jsonschema:"More files match than were returned."`
}

type fileEntry struct {
	Name       string    `json:"name"`
	Size       int64     `json:"size"`
	ModifiedAt time.Time `json:"modified_at"`
	URI        string    `json:"uri"`
}

type readInput struct {
	Path     string `json:"path" jsonschema:"The file, relative to the working directory."`
	ThreadID string `json:"thread_id,omitempty" jsonschema:"The thread to read from; leave it out for this session's thread."`
}

type fileRead struct {
	ThreadID    string `json:"thread_id"`
	Name        string `json:"name"`
	Size        int64  `json:"size"`
	ContentType string `json:"content_type"`
	URL         string `json:"url" jsonschema:"A presigned download URL."`
	Text        string `json:"text,omitempty" jsonschema:"The file's content, when it is small UTF-8 text."`
}

// resourceURI names a workspace file as an MCP resource.
func resourceURI(thread, name string) string {
	return "codeinterp://threads/" + thread + "/files/" + name
}

func (s *server) addFileTools(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "upload_file", Title: "Upload a file",
		Description: "Put a file into the thread's working directory, where code run afterwards finds it. For files an execution needs once, the files argument of code_interpreter does the same in one call."}, s.upload)
	mcp.AddTool(srv, &mcp.Tool{Name: "list_files", Title: "List files",
		Description: "List the files in the thread's working directory (as of its last execution or upload), with sizes. Files written under outputs/ are also returned as links by code_interpreter.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.list)
	mcp.AddTool(srv, &mcp.Tool{Name: "read_file", Title: "Read a file",
		Description: fmt.Sprintf("Read a file of the thread's working directory: small text files (up to %d bytes) come back inline, anything else as a download link.", s.cfg.Limits.InlineBytes),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.read)
}

func (s *server) upload(ctx context.Context, req *mcp.CallToolRequest, in uploadInput) (*mcp.CallToolResult, *uploaded, error) {
	tenant, thread, err := target(req, in.ThreadID)
	if err != nil {
		return nil, nil, err
	}
	var (
		name string
		obj  storage.Object
	)
	switch {
	case in.ContentBase64 != "" && in.URL != "":
		err = service.Invalid("url", "give content_base64 or url, not both")
	case in.URL != "":
		// The service takes the tenant's rate token before it connects anywhere.
		name, obj, err = s.svc.PutFileURL(ctx, tenant, thread, in.Name, "url", in.URL)
	default:
		var data []byte
		if data, err = s.decode(in.ContentBase64); err == nil {
			name, obj, err = s.svc.PutFile(ctx, tenant, thread, in.Name, bytes.NewReader(data), int64(len(data)))
		}
	}
	if err != nil {
		return nil, nil, s.callError("upload_file", err)
	}
	out := &uploaded{ThreadID: thread, Name: name, Size: obj.Size, SHA256: obj.SHA256, URI: resourceURI(thread, name)}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s is in the workspace (%d bytes)", name, obj.Size)}}}, out, nil
}

// decode is upload_file's inline content.
func (s *server) decode(content string) ([]byte, error) {
	if n := base64.StdEncoding.DecodedLen(len(content)); int64(n) > s.cfg.Limits.FileBytes+2 {
		return nil, service.TooLarge("content_base64", "the file is about %d bytes; the limit is %d", n, s.cfg.Limits.FileBytes)
	}
	data, err := base64.StdEncoding.DecodeString(content)
	if err != nil {
		return nil, service.Invalid("content_base64", "is not valid base64: %v", err)
	}
	return data, nil
}

func (s *server) list(ctx context.Context, req *mcp.CallToolRequest, in listInput) (*mcp.CallToolResult, *listing, error) {
	tenant, thread, err := target(req, in.ThreadID)
	if err != nil {
		return nil, nil, err
	}
	limit := in.MaxEntries
	switch {
	case limit == 0:
		limit = 100
	case limit < 1 || limit > 1000:
		return nil, nil, fmt.Errorf("invalid_argument: max_entries: must be between 1 and 1000")
	}
	prefix := ""
	if in.Path != "" && in.Path != "." {
		clean, err := sandbox.CleanPath(in.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("invalid_argument: path: %v", err)
		}
		prefix = clean + "/"
	}
	out := &listing{ThreadID: thread, Files: []fileEntry{}}
	th, err := s.svc.Thread(ctx, tenant, thread)
	if err != nil && !isNotFound(err) { // a thread never used has no files yet
		return nil, nil, s.callError("list_files", err)
	}
	var lines []string
	if th != nil {
		for _, f := range th.Files {
			if !strings.HasPrefix(f.Name, prefix) {
				continue
			}
			if len(out.Files) == limit {
				out.Truncated = true
				break
			}
			out.Files = append(out.Files, fileEntry{Name: f.Name, Size: f.Size, ModifiedAt: f.ModTime.UTC(), URI: resourceURI(thread, f.Name)})
			lines = append(lines, fmt.Sprintf("%s\t%d bytes", f.Name, f.Size))
		}
	}
	text := strings.Join(lines, "\n")
	switch {
	case len(lines) == 0:
		text = "no files"
	case out.Truncated:
		text += fmt.Sprintf("\n(more files: only the first %d are listed)", limit)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
}

func isNotFound(err error) bool {
	var se *service.Error
	return errors.As(err, &se) && se.Code == service.CodeNotFound
}

func (s *server) read(ctx context.Context, req *mcp.CallToolRequest, in readInput) (*mcp.CallToolResult, *fileRead, error) {
	tenant, thread, err := target(req, in.ThreadID)
	if err != nil {
		return nil, nil, err
	}
	f, err := s.svc.GetFile(ctx, tenant, thread, in.Path)
	if err != nil {
		return nil, nil, s.callError("read_file", err)
	}
	url, err := s.svc.FileURL(ctx, f, path.Base(f.Name))
	if err != nil {
		return nil, nil, s.callError("read_file", err)
	}
	out := &fileRead{ThreadID: thread, Name: f.Name, Size: f.Size, ContentType: f.ContentType, URL: url}
	if f.Size <= int64(s.cfg.Limits.InlineBytes) {
		if data, err := s.readAll(ctx, f); err == nil && utf8.Valid(data) && !bytes.ContainsRune(data, 0) {
			out.Text = string(data)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out.Text}}}, out, nil
		}
	}
	size := f.Size
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{URI: url, Name: f.Name, MIMEType: f.ContentType, Size: &size}}}, out, nil
}

// readAll reads an artifact, never more than the size it was stored with.
func (s *server) readAll(ctx context.Context, f jobs.File) ([]byte, error) {
	rc, _, err := s.svc.OpenFile(ctx, f)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, f.Size+1))
	if err == nil && int64(len(data)) > f.Size {
		err = fmt.Errorf("artifact %s is longer than its recorded %d bytes", f.Key, f.Size)
	}
	return data, err
}
