package mcp

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// content is what a model reads of an execution: stdout and stderr (clipped to the
// text budget), the last expression's value, the first figures (Limits.Images) as
// PNG images fitted to the image budget and the others as links, the error with its
// traceback, each output file as a link, and the service's notes.
func (s *server) content(ctx context.Context, ex *jobs.Execution, v *jobs.View) []mcp.Content {
	files, stored := map[string]jobs.FileView{}, map[string]jobs.File{}
	for _, f := range v.Files {
		files[f.Name] = f
	}
	for _, f := range ex.Files {
		stored[f.Name] = f
	}
	var out []mcp.Content
	text := func(t string) { out = append(out, &mcp.TextContent{Text: t}) }
	if t := s.stream(ctx, v.Stdout, v.StdoutTruncated, stored["stdout.log"], files["stdout.log"]); t != "" {
		text(t)
	}
	if t := s.stream(ctx, v.Stderr, v.StderrTruncated, stored["stderr.log"], files["stderr.log"]); t != "" {
		text("[stderr]\n" + t)
	}
	figures := map[string]bool{}
	for _, r := range v.Results {
		switch r.Type {
		case "text/plain":
			text("[result]\n" + s.clipText(r.Text))
		case "image/png":
			var img *mcp.ImageContent
			outcome := figOverCount
			if len(figures) < s.cfg.Limits.Images {
				img, outcome = s.figure(ctx, stored[r.File])
			}
			figures[r.File] = true
			s.figures.WithLabelValues(outcome).Inc()
			if img != nil {
				out = append(out, img)
			} else if f, ok := files[r.File]; ok {
				out = append(out, link(f))
			}
		}
	}
	switch {
	case v.Status == jobs.TimedOut:
		text(fmt.Sprintf("[timed out] the code ran past its timeout of %s and was stopped; variables defined before are kept", formatMS(v.DurationMS)))
	case v.Status == jobs.Canceled:
		text("[canceled] the execution was canceled")
	}
	if e := v.Error; e != nil && v.Status != jobs.TimedOut {
		msg := e.Traceback
		if msg == "" {
			msg = e.Name + ": " + e.Value
		}
		text("[error]\n" + s.clipText(msg))
	}
	for _, f := range v.Files {
		if sandbox.IsOutput(f.Name) && !figures[f.Name] && !strings.HasPrefix(f.Name, "outputs/.results/") {
			out = append(out, link(f))
		}
	}
	if len(v.Notes) > 0 {
		text("[notes]\n" + strings.Join(v.Notes, "\n"))
	}
	if len(out) == 0 {
		text("(no output)")
	}
	return out
}

func formatMS(ms *int64) string {
	if ms == nil {
		return "its limit"
	}
	return fmt.Sprintf("%.1f s", float64(*ms)/1000)
}

func (s *server) clipText(t string) string {
	return clip(t, t, int64(len(t)), s.cfg.Limits.TextBytes, "")
}

// stream clips one output stream. The record holds its head; when the worker cut it,
// the whole stream is the log file, whose tail is read from storage
// with one ranged request.
func (s *server) stream(ctx context.Context, head string, cut bool, log jobs.File, view jobs.FileView) string {
	if !cut || log.Key == "" {
		return s.clipText(head)
	}
	tail := ""
	if rc, err := s.svc.OpenFileTail(ctx, log, int64(s.cfg.Limits.TextBytes/2)); err == nil {
		tail, err = readTail(rc, s.cfg.Limits.TextBytes/2)
		rc.Close()
		if err != nil {
			tail = ""
		}
	}
	return clip(head, tail, log.Size, s.cfg.Limits.TextBytes, "the file "+log.Name+" ("+view.URL+")")
}

// link is a file as a resource link: its presigned URL, name, type and size.
func link(f jobs.FileView) *mcp.ResourceLink {
	size := f.Size
	return &mcp.ResourceLink{URI: f.URL, Name: f.Name, MIMEType: f.ContentType, Size: &size,
		Description: "download link, valid until " + f.ExpiresAt.Format("2006-01-02 15:04 MST")}
}
