package sandboxtest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// Fake is an in-memory sandbox runtime for unit tests of the code that drives
// sandboxes (the worker, the janitor): it implements [sandbox.Runtime] and
// [sandbox.Host] with the semantics the runtime-level suite pins (ExerciseRuntime
// runs against it too), keeps workspaces in memory, and runs no code: a run
// succeeds with the output RunFunc gives, if set.
type Fake struct {
	// RunFunc, if set, decides the outcome of each run (Status defaults to
	// Succeeded); the fake fills in KernelRestarted and Workspace.
	RunFunc func(req sandbox.Request) sandbox.Outcome
	// Now dates created sandboxes; default time.Now.
	Now func() time.Time

	mu        sync.Mutex
	boxes     map[string]*FakeSandbox // by id
	next      int
	created   int
	failNext  error
	failWipe  error
	pingError error
}

// NewFake returns an empty fake runtime.
func NewFake() *Fake { return &Fake{boxes: map[string]*FakeSandbox{}} }

var (
	_ sandbox.Runtime = (*Fake)(nil)
	_ sandbox.Host    = (*Fake)(nil)
	_ sandbox.Sandbox = (*FakeSandbox)(nil)
)

// FailNextCreate makes the next Create or CreateBlank fail with err.
func (f *Fake) FailNextCreate(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failNext = err
}

// FailNextWipe makes the next Wipe fail with err.
func (f *Fake) FailNextWipe(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failWipe = err
}

// SetPingError makes Ping fail with err (nil: answer).
func (f *Fake) SetPingError(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pingError = err
}

// Created returns how many sandboxes were ever created, blank ones included.
func (f *Fake) Created() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.created
}

// Sandboxes returns the sandboxes that exist now, by name.
func (f *Fake) Sandboxes() map[string]*FakeSandbox {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]*FakeSandbox{}
	for _, b := range f.boxes {
		out[b.name] = b
	}
	return out
}

// ThreadName returns the name a thread's sandbox has: one per thread, derived from
// the exact tenant and thread.
func (f *Fake) ThreadName(tenant, thread string) string {
	sum := sha256.Sum256([]byte(tenant + "\x00" + thread))
	return "fake-t-" + hex.EncodeToString(sum[:8])
}

func (f *Fake) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// Create starts a sandbox; a thread's fails with ErrExists if the thread has one.
func (f *Fake) Create(_ context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	if spec.Egress {
		return nil, sandbox.ErrNoEgress // the fake has no network to give
	}
	return f.create(spec, false)
}

// CreateBlank starts a sandbox for a warm pool, of spec's Owner, Image and Limits.
func (f *Fake) CreateBlank(_ context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	return f.create(sandbox.Spec{Owner: spec.Owner, Image: spec.Image, Limits: spec.Limits, Preload: true}, true)
}

func (f *Fake) create(spec sandbox.Spec, blank bool) (sandbox.Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failNext; err != nil {
		f.failNext = nil
		return nil, err
	}
	f.next++
	id := fmt.Sprintf("fake-%04d", f.next)
	name := id
	if spec.Recyclable && spec.Thread != "" {
		return nil, fmt.Errorf("create sandbox: a thread's sandbox cannot be recyclable")
	}
	if spec.Thread != "" {
		name = f.ThreadName(spec.Tenant, spec.Thread)
		if f.byName(name) != nil {
			return nil, fmt.Errorf("%w: %s", sandbox.ErrExists, name)
		}
	}
	b := &FakeSandbox{f: f, id: id, name: name, tenant: spec.Tenant, thread: spec.Thread, owner: spec.Owner,
		blank: blank || spec.Recyclable, recyclable: spec.Recyclable, ofThread: spec.Thread != "", created: f.now(), files: map[string][]byte{}, kernel: true, fence: spec.Fence}
	f.boxes[id] = b
	f.created++
	return b, nil
}

func (f *Fake) byName(name string) *FakeSandbox {
	for _, b := range f.boxes {
		if b.name == name {
			return b
		}
	}
	return nil
}

// Find adopts a thread's sandbox with a fresh kernel, or returns nil, nil.
func (f *Fake) Find(_ context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.byName(f.ThreadName(spec.Tenant, spec.Thread))
	if b == nil {
		return nil, nil
	}
	if b.tenant != spec.Tenant || b.thread != spec.Thread {
		return nil, fmt.Errorf("sandbox %s does not belong to thread %s of %s: refusing it", b.name, spec.Thread, spec.Tenant)
	}
	if spec.Fence > 0 {
		if err := b.raise(spec.Fence); err != nil {
			return nil, err
		}
	}
	b.paused, b.kernel, b.restartPending = false, true, true
	b.adoptions++
	return b, nil
}

// Count returns how many sandboxes, blank ones aside, exist.
func (f *Fake) Count(context.Context) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, b := range f.boxes {
		if !b.blank || b.ofThread {
			n++
		}
	}
	return n, nil
}

// Ping answers, unless SetPingError says otherwise.
func (f *Fake) Ping(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pingError
}

// List describes every sandbox.
func (f *Fake) List(context.Context) ([]sandbox.Info, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]sandbox.Info, 0, len(f.boxes))
	for _, id := range slices.Sorted(maps.Keys(f.boxes)) {
		b := f.boxes[id]
		out = append(out, sandbox.Info{ID: b.id, Name: b.name, Tenant: b.tenant, Thread: b.thread, Owner: b.owner,
			OfThread: b.ofThread, Blank: b.blank && !b.ofThread, Created: b.created, Running: true, Paused: b.paused})
	}
	return out, nil
}

// Open returns a handle on a sandbox by id.
func (f *Fake) Open(_ context.Context, id string) (sandbox.Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.boxes[id]
	if b == nil {
		return nil, fmt.Errorf("%w: %s", sandbox.ErrNotFound, id)
	}
	return b, nil
}

// FakeSandbox is a sandbox of a [Fake].
type FakeSandbox struct {
	f                       *Fake
	id, name                string
	tenant, thread, owner   string
	blank, ofThread         bool
	recyclable              bool
	wipes                   int
	created                 time.Time
	files                   map[string][]byte
	skills                  map[string]map[string][]byte // skill name → its files
	skillPuts               int
	paused, kernel          bool
	restartPending          bool
	removed                 bool
	runs, pauses, adoptions int
	snapshots               int
	fence                   int64 // the largest fencing token recorded (Fence)
	removeErr               error // FailRemove
}

// FailRemove makes every Remove of the sandbox fail with err (nil: succeed), as a
// sandbox its code broke would.
func (b *FakeSandbox) FailRemove(err error) {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	b.removeErr = err
}

// Fence records token unless a larger one is recorded (sandbox.ErrFenced). The fake
// hands every caller the same handle, so only Fence and Find check the token; the
// Docker runtime's per-handle checks are pinned by its own tests.
func (b *FakeSandbox) Fence(_ context.Context, token int64) error {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	return b.raise(token)
}

// FenceToken returns the largest fencing token recorded in the sandbox.
func (b *FakeSandbox) FenceToken() int64 {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	return b.fence
}

func (b *FakeSandbox) raise(token int64) error {
	if token < b.fence {
		return fmt.Errorf("%w: %s (token %d, recorded %d)", sandbox.ErrFenced, b.name, token, b.fence)
	}
	b.fence = token
	return nil
}

// ID returns the sandbox's id.
func (b *FakeSandbox) ID() string { return b.id }

// Name returns the sandbox's name.
func (b *FakeSandbox) Name() string { return b.name }

// Stats returns how often the sandbox ran code, was paused, adopted and snapshotted.
func (b *FakeSandbox) Stats() (runs, pauses, adoptions, snapshots int) {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	return b.runs, b.pauses, b.adoptions, b.snapshots
}

// Paused reports whether the sandbox is paused.
func (b *FakeSandbox) Paused() bool {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	return b.paused
}

// Thread returns the tenant and thread the sandbox belongs to ("" for a blank one).
func (b *FakeSandbox) Thread() (tenant, thread string) {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	return b.tenant, b.thread
}

var errRemoved = errors.New("fake sandbox removed")

func (b *FakeSandbox) live() error {
	if b.removed {
		return fmt.Errorf("%w: %s", errRemoved, b.id)
	}
	return nil
}

// Run "runs" req: the outcome is RunFunc's, or success.
func (b *FakeSandbox) Run(ctx context.Context, req sandbox.Request, onEvent func(sandbox.Event)) (sandbox.Outcome, error) {
	b.f.mu.Lock()
	if err := b.live(); err != nil {
		b.f.mu.Unlock()
		return sandbox.Outcome{}, err
	}
	b.paused = false
	restarted := b.restartPending || !b.kernel
	b.restartPending, b.kernel = false, true
	b.runs++
	runFunc := b.f.RunFunc
	b.f.mu.Unlock()
	out := sandbox.Outcome{Status: sandbox.Succeeded}
	if ctx.Err() != nil {
		out = sandbox.Outcome{Status: sandbox.Canceled, Error: &sandbox.Error{Name: "Canceled", Value: "execution was canceled"}}
	} else if runFunc != nil {
		out = runFunc(req)
		if out.Status == "" {
			out.Status = sandbox.Succeeded
		}
	}
	if onEvent != nil && out.Stdout != "" {
		onEvent(sandbox.Event{Kind: sandbox.Stdout, Text: out.Stdout})
	}
	out.KernelRestarted = out.KernelRestarted || restarted
	files, _ := b.Files(ctx)
	out.Workspace = files
	return out, nil
}

// PutFiles writes files into the workspace.
func (b *FakeSandbox) PutFiles(_ context.Context, files []sandbox.File) error {
	for i := range files {
		clean, err := sandbox.CleanPath(files[i].Name)
		if err != nil {
			return err
		}
		data, err := io.ReadAll(io.LimitReader(files[i].Body, files[i].Size))
		if err != nil {
			return err
		}
		b.f.mu.Lock()
		if err := b.live(); err != nil {
			b.f.mu.Unlock()
			return err
		}
		b.files[clean] = data
		b.f.mu.Unlock()
	}
	return nil
}

// OpenFile reads a workspace file.
func (b *FakeSandbox) OpenFile(_ context.Context, name string) (io.ReadCloser, sandbox.FileInfo, error) {
	clean, err := sandbox.CleanPath(name)
	if err != nil {
		return nil, sandbox.FileInfo{}, err
	}
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	if err := b.live(); err != nil {
		return nil, sandbox.FileInfo{}, err
	}
	data, ok := b.files[clean]
	if !ok {
		return nil, sandbox.FileInfo{}, fmt.Errorf("%w: %s", sandbox.ErrNoFile, clean)
	}
	return io.NopCloser(bytes.NewReader(data)), sandbox.FileInfo{Name: clean, Size: int64(len(data))}, nil
}

// ReadFiles reads workspace files, in order, within limits.
func (b *FakeSandbox) ReadFiles(ctx context.Context, names []string, limits sandbox.ReadLimits, fn func(sandbox.FileInfo, io.Reader, error) error) error {
	var sent int64
	for _, name := range names {
		rc, info, err := b.OpenFile(ctx, name)
		if errors.Is(err, errRemoved) {
			return err
		}
		var body io.Reader
		switch {
		case err != nil:
			info.Name = name
		case !limits.Admits(info.Size, sent):
			err = fmt.Errorf("%w: %s", sandbox.ErrTooLarge, name)
		default:
			body, sent = rc, sent+info.Size
		}
		if err := fn(info, body, err); err != nil {
			return err
		}
	}
	return nil
}

// Files lists the workspace.
func (b *FakeSandbox) Files(context.Context) ([]sandbox.FileInfo, error) {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	if err := b.live(); err != nil {
		return nil, err
	}
	out := []sandbox.FileInfo{}
	for name, data := range b.files {
		out = append(out, sandbox.FileInfo{Name: name, Size: int64(len(data))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Pause pauses the sandbox.
func (b *FakeSandbox) Pause(context.Context) error {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	if err := b.live(); err != nil {
		return err
	}
	if !b.paused {
		b.paused = true
		b.pauses++
	}
	return nil
}

// Resume unpauses the sandbox and reports whether it was paused.
func (b *FakeSandbox) Resume(context.Context) (bool, error) {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	if err := b.live(); err != nil {
		return false, err
	}
	was := b.paused
	b.paused = false
	return was, nil
}

// Snapshot archives the workspace as tar.
func (b *FakeSandbox) Snapshot(context.Context) (io.ReadCloser, error) {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	if err := b.live(); err != nil {
		return nil, err
	}
	b.snapshots++
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(b.files)) {
		data := b.files[name]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(data)), Mode: 0o644}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return io.NopCloser(&buf), nil
}

// Restore unpacks a Snapshot archive into the workspace.
func (b *FakeSandbox) Restore(_ context.Context, archive io.Reader) error {
	tr := tar.NewReader(archive)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		b.f.mu.Lock()
		b.files[hdr.Name] = data
		b.f.mu.Unlock()
	}
}

// Assign gives a blank sandbox to a thread.
func (b *FakeSandbox) Assign(_ context.Context, tenant, thread string) error {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	if b.recyclable {
		return fmt.Errorf("assign sandbox %s: a recyclable one-off sandbox never serves a thread", b.name)
	}
	name := b.f.ThreadName(tenant, thread)
	if other := b.f.byName(name); other != nil && other != b {
		return fmt.Errorf("%w: %s", sandbox.ErrExists, name)
	}
	b.name, b.tenant, b.thread, b.ofThread = name, tenant, thread, true
	return nil
}

// Wipe empties the workspace of a recyclable sandbox and gives it a fresh kernel.
func (b *FakeSandbox) Wipe(context.Context) error {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	if err := b.live(); err != nil {
		return err
	}
	if !b.recyclable {
		return fmt.Errorf("%w: %s", sandbox.ErrNotRecyclable, b.name)
	}
	if err := b.f.failWipe; err != nil {
		b.f.failWipe = nil
		return err
	}
	b.files, b.kernel, b.restartPending, b.paused = map[string][]byte{}, true, false, false
	b.skills = nil
	b.wipes++
	return nil
}

// PutSkill keeps a skill's files, like a runtime puts them at skills/<name>/;
// they are in no listing and no snapshot.
func (b *FakeSandbox) PutSkill(_ context.Context, name string, archive io.Reader) error {
	if err := sandbox.CheckSkillName(name); err != nil {
		return fmt.Errorf("%w: %v", sandbox.ErrBadPath, err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(archive)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			files[hdr.Name] = data
		default:
			return fmt.Errorf("%w: skill entry %q is not a file or directory", sandbox.ErrBadPath, hdr.Name)
		}
	}
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	if err := b.live(); err != nil {
		return err
	}
	if b.skills == nil {
		b.skills = map[string]map[string][]byte{}
	}
	b.skills[name] = files
	b.skillPuts++
	return nil
}

// Skill returns the files of a skill put into the sandbox, or nil.
func (b *FakeSandbox) Skill(name string) map[string][]byte {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	return b.skills[name]
}

// SkillPuts returns how often a skill was put into the sandbox.
func (b *FakeSandbox) SkillPuts() int {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	return b.skillPuts
}

// Wipes returns how often the sandbox was wiped.
func (b *FakeSandbox) Wipes() int {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	return b.wipes
}

// EgressAddr: a fake sandbox never has egress.
func (b *FakeSandbox) EgressAddr() (netip.Addr, bool) { return netip.Addr{}, false }

// Release ends the kernel; the sandbox stays for Find.
func (b *FakeSandbox) Release() {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	b.kernel = false
}

// Remove deletes the sandbox; safe to call twice.
func (b *FakeSandbox) Remove(context.Context) error {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	if b.removeErr != nil {
		return b.removeErr
	}
	b.removed = true
	delete(b.f.boxes, b.id)
	return nil
}
