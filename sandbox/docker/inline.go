package docker

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// A recyclable (one-off) sandbox's small inputs and outputs go through its kernel's
// stream, as "put" and "get" requests, rather than through a file helper's `docker
// exec`, which costs ~60–100 ms each: they are all that stands between a one-off's
// pickup and its code, and between its end and its result. The kernel unpacks and
// packs them with the helper's own code (fsop.py), as the same user, so nothing is
// trusted more than with an exec.

// inlinePutMax is the most input a recyclable sandbox takes through its kernel's
// stream rather than a file helper's `docker exec`: small enough to hold in memory,
// large enough for the CSV a one-off usually gets. An exec costs ~60–100 ms, and a
// one-off's inputs are the only thing between its pickup and its code.
const inlinePutMax = 1 << 20

// putTimeout bounds writing inputs through the kernel: a megabyte into a tmpfs.
const putTimeout = 30 * time.Second

// putInline writes files through the kernel of a recyclable sandbox, if it has one
// and they are small: one "put" request on the kernel's stream carrying the same tar
// archive the file helper would get, unpacked by the same code (fsop.Writer: no link
// followed in any component) in the kernel, which runs as the same user as the
// helper, so nothing is trusted more than with an exec. The zygote forwards the
// request to its child, the interpreter the next code runs in. done reports whether
// it was taken this way; if not, the caller uses the helper.
func (s *Sandbox) putInline(ctx context.Context, files []sandbox.File) (done bool, err error) {
	var size int64
	for _, f := range files {
		size += f.Size
	}
	if !s.spec.Recyclable || size > inlinePutMax {
		return false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.kernel
	if k == nil {
		return false, nil // the helper works without a kernel
	}
	if _, err := s.resumeLocked(ctx); err != nil {
		return true, err
	}
	var archive bytes.Buffer
	if err := writeTar(&archive, files); err != nil {
		return true, err
	}
	ctx, cancel := context.WithTimeout(ctx, putTimeout)
	defer cancel()
	ev, err := s.askLocked(ctx, k, wireRequest{Op: "put", ID: "put-" + randomHex(12), Tar: archive.Bytes()}, "put")
	switch {
	case err != nil:
		return true, fmt.Errorf("copy files into %s: %w", s.name, err)
	case !ev.OK:
		why := sandbox.BoundNotes([]string{cmp.Or(ev.Reason, "the kernel failed")})[0]
		return true, fmt.Errorf("copy files into %s: %s", s.name, why)
	case ev.Failed > 0:
		errs := sandbox.BoundNotes(ev.Errors) // as untrusted as the code
		if len(errs) == 0 {
			errs = []string{fmt.Sprintf("%d entries not written", ev.Failed)}
		}
		return true, fmt.Errorf("%w: %s", sandbox.ErrBadPath, strings.Join(errs, "; "))
	}
	return true, nil
}

// inlineGetMax bounds the answer a kernel sends for a one-off's outputs (base64 in one
// event line, under maxGotLine); larger outputs are read by the helper.
const inlineGetMax = 4 << 20

// getTimeout bounds reading outputs through the kernel. After the code ran, the
// kernel is the code's process: it may be busy or gone, and then the helper reads.
const getTimeout = 10 * time.Second

// readInline reads files through the kernel of a recyclable sandbox after its code
// ran: one "get" request answered by the archive the file helper would send, read by
// the same fileReader, which trusts it no more (entries by index, within limits). It
// returns nil, and no error, when the helper is to read instead: no kernel, a kernel
// that did not answer in time or failed, or outputs past inlineGetMax.
func (s *Sandbox) readInline(ctx context.Context, names []string, limits sandbox.ReadLimits) (*fileReader, error) {
	if !s.spec.Recyclable {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.kernel
	if k == nil {
		return nil, nil
	}
	if _, err := s.resumeLocked(ctx); err != nil {
		return nil, err
	}
	askCtx, cancel := context.WithTimeout(ctx, getTimeout)
	defer cancel()
	ev, err := s.askLocked(askCtx, k, wireRequest{Op: "get", ID: "get-" + randomHex(12), Names: names,
		Each: unbounded(limits.Each), Total: unbounded(limits.Total), Max: inlineGetMax}, "got")
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil || !ev.OK || len(ev.Tar) > inlineGetMax:
		return nil, nil
	}
	answer := bytes.NewReader(ev.Tar)
	why := func() string { return "read through the kernel" }
	return newFileReader(answer, io.NopCloser(answer), why, names, limits), nil
}
