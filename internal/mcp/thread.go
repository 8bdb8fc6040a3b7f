package mcp

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type threadInput struct {
	ThreadID string `json:"thread_id,omitempty" jsonschema:"The thread; leave it out for this session's thread."`
}

type resetResult struct {
	ThreadID string `json:"thread_id"`
	Reset    bool   `json:"reset" jsonschema:"A kernel was restarted (false: the thread had none running)."`
}

type interruptResult struct {
	ThreadID    string `json:"thread_id"`
	Interrupted string `json:"interrupted,omitempty" jsonschema:"The execution interrupted; empty when none was running."`
}

func (s *server) addThreadTools(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "reset", Title: "Restart the interpreter",
		Description: "Restart the thread's interpreter: variables, imports and running processes are gone; files in the working directory stay. Use it when the state is broken or memory is full.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true}}, s.reset)
	mcp.AddTool(srv, &mcp.Tool{Name: "interrupt", Title: "Interrupt",
		Description: "Interrupt the code the thread is running now (like Ctrl-C: Python raises KeyboardInterrupt). Code queued after it still runs.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true}}, s.interrupt)
}

func (s *server) reset(ctx context.Context, req *mcp.CallToolRequest, in threadInput) (*mcp.CallToolResult, *resetResult, error) {
	tenant, thread, err := target(req, in.ThreadID)
	if err != nil {
		return nil, nil, err
	}
	out := &resetResult{ThreadID: thread, Reset: true}
	text := "the interpreter restarted: variables are gone, files are kept"
	if err := s.svc.ResetThread(ctx, tenant, thread); isNotFound(err) {
		out.Reset, text = false, "the thread has no interpreter yet: nothing to reset"
	} else if err != nil {
		return nil, nil, s.callError("reset", err)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
}

func (s *server) interrupt(ctx context.Context, req *mcp.CallToolRequest, in threadInput) (*mcp.CallToolResult, *interruptResult, error) {
	tenant, thread, err := target(req, in.ThreadID)
	if err != nil {
		return nil, nil, err
	}
	ex, err := s.svc.Interrupt(ctx, tenant, thread)
	if err != nil {
		return nil, nil, s.callError("interrupt", err)
	}
	out, text := &interruptResult{ThreadID: thread}, "nothing was running"
	if ex != nil {
		out.Interrupted, text = ex.ID, fmt.Sprintf("interrupted execution %s", ex.ID)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
}

func (s *server) addTools(srv *mcp.Server) {
	s.addInterpreter(srv)
	s.addFileTools(srv)
	s.addThreadTools(srv)
}
