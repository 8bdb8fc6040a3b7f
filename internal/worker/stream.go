package worker

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// maxStreamEntry bounds the text of one stdout, stderr or result event: the kernel
// sends chunks of at most 64 KiB, but nothing it says is trusted.
const maxStreamEntry = 64 << 10

// stream publishes a running execution's stdout, stderr and results within the byte
// budget of its event stream: text is published in entries of at most maxStreamEntry
// bytes, a longer result's text is cut (and the event says "truncated"), and once
// the budget is spent one truncated event is published and then no more output.
// Status, file and done events are not its concern: they are always published.
type stream struct {
	r      *Runner
	ctx    context.Context
	ex     *jobs.Execution
	left   int64 // bytes of the budget not spent yet
	budget int64 // of the execution's profile
	cut    bool  // the truncated event was published
}

func (r *Runner) newStream(ctx context.Context, ex *jobs.Execution) *stream {
	_, b := r.sizeOf(ex)
	return &stream{r: r, ctx: ctx, ex: ex, left: b.StreamBytes, budget: b.StreamBytes}
}

// resultEvent is the data of a result event.
type resultEvent struct {
	sandbox.Rich
	Truncated bool `json:"truncated,omitempty"` // Text was cut to maxStreamEntry bytes
}

// text publishes stdout or stderr text.
func (s *stream) text(typ jobs.EventType, text string) {
	for text != "" && !s.cut {
		chunk := prefix(text, min(maxStreamEntry, int(min(s.left, int64(len(text))))))
		if chunk == "" {
			s.truncate()
			return
		}
		s.left -= int64(len(chunk))
		s.r.publish(s.ctx, s.ex, typ, map[string]string{"text": chunk})
		text = text[len(chunk):]
	}
}

// result publishes a rich result, whole or not at all.
func (s *stream) result(rich sandbox.Rich) {
	if s.cut {
		return
	}
	ev := resultEvent{Rich: rich}
	if len(rich.Text) > maxStreamEntry {
		ev.Text, ev.Truncated = prefix(rich.Text, maxStreamEntry), true
	}
	if int64(ev.Size()) > s.left {
		s.truncate()
		return
	}
	s.left -= int64(ev.Size())
	s.r.publish(s.ctx, s.ex, jobs.EventResult, ev)
}

func (s *stream) truncate() {
	s.cut = true
	budget := s.budget
	s.r.publish(s.ctx, s.ex, jobs.EventTruncated, map[string]any{
		"budget": budget,
		"message": fmt.Sprintf("the output passed the %d bytes an execution's event stream may carry: "+
			"no more stdout, stderr or results are streamed; the execution keeps them", budget),
	})
}

// prefix returns the longest prefix of s of at most n bytes that does not end inside
// a UTF-8 sequence; "" only when n is 0 or s starts with a sequence longer than n.
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Back off at most to the start of one sequence: invalid text is cut anywhere.
	for i := 1; i < utf8.UTFMax && n > 0 && !utf8.RuneStart(s[n]); i++ {
		n--
	}
	return s[:n]
}
