package journal

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"sync"

	"github.com/codeinterp/codeinterp/sandbox"
)

// box is a journaled sandbox. It knows the thread the sandbox serves (from the spec,
// or from Assign) and the token its handle acts under (the spec's, then each
// successful Fence's).
type box struct {
	j  *Journal
	sb sandbox.Sandbox
	id string

	mu    sync.Mutex
	th    threadOf
	token int64
}

func (b *box) begin(op string) *pending {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.j.begin(Entry{Op: op, Sandbox: b.id, Tenant: b.th.tenant, Thread: b.th.thread, Token: b.token})
}

func (b *box) ID() string { return b.sb.ID() }

func (b *box) Run(ctx context.Context, req sandbox.Request, onEvent func(sandbox.Event)) (sandbox.Outcome, error) {
	p := b.begin(OpRun)
	p.e.Run = req.ID
	out, err := b.sb.Run(ctx, req, onEvent)
	if err == nil {
		p.e.Outcome = string(out.Status)
		if out.Error != nil {
			p.e.Outcome += " " + out.Error.Name
		}
	}
	p.end(err)
	return out, err
}

func (b *box) PutFiles(ctx context.Context, files []sandbox.File) error {
	p := b.begin(OpPut)
	err := b.sb.PutFiles(ctx, files)
	p.end(err)
	return err
}

func (b *box) PutSkill(ctx context.Context, name string, archive io.Reader) error {
	p := b.begin(OpSkill)
	err := b.sb.PutSkill(ctx, name, archive)
	p.end(err)
	return err
}

func (b *box) OpenFile(ctx context.Context, name string) (io.ReadCloser, sandbox.FileInfo, error) {
	p := b.begin(OpOpen)
	rc, info, err := b.sb.OpenFile(ctx, name)
	if err != nil {
		p.end(err)
		return rc, info, err
	}
	return &stream{rc: rc, p: p}, info, nil
}

func (b *box) ReadFiles(ctx context.Context, names []string, limits sandbox.ReadLimits, fn func(sandbox.FileInfo, io.Reader, error) error) error {
	p := b.begin(OpOpen)
	err := b.sb.ReadFiles(ctx, names, limits, fn)
	p.end(err)
	return err
}

func (b *box) Files(ctx context.Context) ([]sandbox.FileInfo, error) {
	p := b.begin(OpFiles)
	files, err := b.sb.Files(ctx)
	p.end(err)
	return files, err
}

func (b *box) Pause(ctx context.Context) error {
	p := b.begin(OpPause)
	err := b.sb.Pause(ctx)
	p.end(err)
	return err
}

func (b *box) Resume(ctx context.Context) (bool, error) {
	p := b.begin(OpResume)
	resumed, err := b.sb.Resume(ctx)
	p.end(err)
	return resumed, err
}

func (b *box) Snapshot(ctx context.Context) (io.ReadCloser, error) {
	p := b.begin(OpSnapshot)
	rc, err := b.sb.Snapshot(ctx)
	if err != nil {
		p.end(err)
		return rc, err
	}
	return &stream{rc: rc, p: p}, nil
}

func (b *box) Restore(ctx context.Context, archive io.Reader) error {
	p := b.begin(OpRestore)
	err := b.sb.Restore(ctx, archive)
	p.end(err)
	return err
}

func (b *box) Assign(ctx context.Context, tenant, thread string) error {
	p := b.begin(OpAssign)
	p.e.Tenant, p.e.Thread = tenant, thread
	err := b.sb.Assign(ctx, tenant, thread)
	if err == nil {
		b.mu.Lock()
		b.th = threadOf{tenant, thread}
		b.mu.Unlock()
	}
	p.end(err)
	return err
}

func (b *box) Fence(ctx context.Context, token int64) error {
	p := b.begin(OpFence)
	p.e.Token = token
	err := b.sb.Fence(ctx, token)
	if err == nil {
		b.mu.Lock()
		b.token = token
		b.mu.Unlock()
	}
	p.end(err)
	return err
}

func (b *box) Wipe(ctx context.Context) error {
	p := b.begin(OpWipe)
	err := b.sb.Wipe(ctx)
	p.end(err)
	return err
}

func (b *box) EgressAddr() (netip.Addr, bool) { return b.sb.EgressAddr() }

func (b *box) Release() {
	p := b.begin(OpRelease)
	b.sb.Release()
	p.end(nil)
}

func (b *box) Remove(ctx context.Context) error {
	p := b.begin(OpRemove)
	err := b.sb.Remove(ctx)
	p.end(err)
	return err
}

// stream is a file or snapshot being read: its operation ends when it is closed, with
// the first error reading it met.
type stream struct {
	rc   io.ReadCloser
	p    *pending
	err  error
	once sync.Once
}

func (s *stream) Read(b []byte) (int, error) {
	n, err := s.rc.Read(b)
	if err != nil && !errors.Is(err, io.EOF) && s.err == nil {
		s.err = err
	}
	return n, err
}

func (s *stream) Close() error {
	err := s.rc.Close()
	s.once.Do(func() { s.p.end(s.err) })
	return err
}
