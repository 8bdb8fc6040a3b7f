package mcp

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const resourcePrefix = "codeinterp://threads/"

func (s *server) addResources(srv *mcp.Server) {
	srv.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "workspace-file", Title: "A file of a thread's workspace", URITemplate: resourcePrefix + "{thread}/files/{+path}",
		Description: fmt.Sprintf("A file in the working directory of a thread (the session's thread is the thread_id tools return), as it is after the thread's earlier executions; up to %d bytes.", s.resourceBytes()),
	}, s.readResource)
}

// listResources answers resources/list with the files of the session's own thread,
// as list_files sees them. The SDK would list only resources registered on the
// server, which every session (every tenant) shares; a thread named by thread_id is
// read through the template, not listed.
func (s *server) listResources(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		lr, ok := req.(*mcp.ListResourcesRequest)
		if method != "resources/list" || !ok {
			return next(ctx, method, req)
		}
		tenant, err := tenantOf(lr.Extra)
		if err != nil {
			return nil, err
		}
		out := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}}
		thread := lr.Session.ID()
		if thread == "" {
			return out, nil
		}
		th, err := s.svc.Thread(ctx, tenant, thread)
		switch {
		case isNotFound(err): // a thread never used has no files yet
			return out, nil
		case err != nil:
			return nil, s.callError("resources/list", err)
		}
		for _, f := range th.Files {
			out.Resources = append(out.Resources, &mcp.Resource{URI: resourceURI(thread, f.Name), Name: f.Name, Size: f.Size})
		}
		return out, nil
	}
}

func (s *server) resourceBytes() int64 { return 16 * int64(s.cfg.Limits.InlineBytes) }

// readResource reads codeinterp://threads/{thread}/files/{path}: the tenant's own
// thread only, like every call.
func (s *server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	thread, name, ok := strings.Cut(strings.TrimPrefix(uri, resourcePrefix), "/files/")
	if !strings.HasPrefix(uri, resourcePrefix) || !ok || thread == "" || name == "" {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	tenant, err := tenantOf(req.Extra)
	if err != nil {
		return nil, err
	}
	f, err := s.svc.GetFile(ctx, tenant, thread, name)
	if isNotFound(err) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, s.callError("resources/read", err)
	}
	if f.Size > s.resourceBytes() {
		return nil, fmt.Errorf("%s is %d bytes, over the %d a resource read returns: use the read_file tool for a download link", name, f.Size, s.resourceBytes())
	}
	data, err := s.readAll(ctx, f)
	if err != nil {
		return nil, s.callError("resources/read", err)
	}
	c := &mcp.ResourceContents{URI: uri, MIMEType: f.ContentType}
	if utf8.Valid(data) {
		c.Text = string(data)
	} else {
		c.Blob = data
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}
