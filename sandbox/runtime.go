package sandbox

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"time"
)

// Errors of sandbox runtimes.
var (
	ErrImageMissing = errors.New("sandbox image missing")
	// ErrExists means the thread already has a sandbox on this host: adopt it with
	// Find instead.
	ErrExists = errors.New("the thread already has a sandbox")
	// ErrNotFound means the sandbox is gone.
	ErrNotFound = errors.New("sandbox not found")
	// ErrFenced means a newer owner of the sandbox's thread has fenced it (see
	// Sandbox.Fence): the caller holds a stale lease and must stop touching it.
	ErrFenced = errors.New("sandbox fenced by a newer owner of its thread")
	// ErrNotRecyclable means Wipe was called on a sandbox not created
	// [Spec.Recyclable].
	ErrNotRecyclable = errors.New("sandbox not recyclable")
	// ErrNoEgress means a sandbox with egress was asked of a runtime that has no
	// egress proxy.
	ErrNoEgress = errors.New("egress is not available on this host (no egress proxy)")
)

// Spec describes a sandbox to create.
type Spec struct {
	Tenant string
	Thread string // empty for a one-off sandbox
	Owner  string // id of the creating worker, for orphan cleanup
	// Image is the image to create the sandbox from; empty: the runtime's own (its
	// configured image, the one blank sandboxes are made of). Find adopts a thread's
	// sandbox whatever image it was made of: the workspace matters more.
	Image  string
	Limits Limits
	// Preload imports numpy, pandas and matplotlib when the kernel starts: slower to
	// create, faster to run. Worth it for sandboxes that serve many runs.
	Preload bool
	// Fence is the fencing token of the thread lease its creator holds (0: none, for
	// one-off and blank sandboxes). Create records it in the new sandbox and Find
	// fences the sandbox with it before touching its processes; see Sandbox.Fence.
	Fence int64
	// Recyclable makes a one-off sandbox that Wipe can make blank again: its kernel
	// is a zygote, preloaded, that forks a fresh interpreter per run. Such a
	// sandbox belongs to no thread and is never given one (Assign, Find); like a
	// blank one, Count leaves it out. Only without Thread.
	Recyclable bool
	// Egress gives the sandbox a way out through the installation's egress proxy,
	// and no other network. Without it a sandbox has no network at all. Blank
	// (pooled) sandboxes never have it.
	Egress bool
}

// Sandbox is one sandbox with its kernel. Implementations are safe for concurrent
// use and serialise runs.
type Sandbox interface {
	// ID identifies the sandbox on its host.
	ID() string
	// Run runs code in the kernel and returns how it ended. The user's code failing,
	// timing out or running out of memory is an [Outcome]; an error means the sandbox
	// itself could not be used. A canceled ctx interrupts the code ([Canceled]).
	// onEvent, if not nil, is called for each event in order.
	Run(ctx context.Context, req Request, onEvent func(Event)) (Outcome, error)
	// PutFiles writes files into the workspace, owned by the code's user.
	PutFiles(ctx context.Context, files []File) error
	// OpenFile streams one regular file of the workspace; a symbolic link, in any
	// component of the path, is never followed ([ErrNotRegular]).
	OpenFile(ctx context.Context, name string) (io.ReadCloser, FileInfo, error)
	// ReadFiles streams regular files of the workspace to fn, in the order named, at
	// the cost of one round trip for all: body holds the file's Size bytes (read it
	// before fn returns), or err says why the file was not read: [ErrBadPath],
	// [ErrNoFile], [ErrNotRegular] (a link in any component is never followed), or
	// [ErrTooLarge] with Size set. An error fn returns stops the reading and is returned.
	ReadFiles(ctx context.Context, names []string, limits ReadLimits, fn func(info FileInfo, body io.Reader, err error) error) error
	// Files lists the regular files in the workspace (at most 1000).
	Files(ctx context.Context) ([]FileInfo, error)
	// PutSkill places a skill's files at [SkillsDir]/<name>/ in the workspace,
	// read-only to the code (a write fails), replacing any files the skill had there.
	// archive is a tar stream of regular files and directories whose paths are
	// relative to the skill; links and other entries are refused ([ErrBadPath]).
	// Skills are never part of a Snapshot or of the Files listing, and a Wipe removes
	// them. It fails with [ErrSkillsInUse] while the code keeps its own SkillsDir.
	PutSkill(ctx context.Context, name string, archive io.Reader) error
	// Pause freezes the sandbox (no CPU; memory and state kept). Runs and file
	// operations resume it by themselves.
	Pause(ctx context.Context) error
	// Resume unpauses the sandbox and reports whether it was paused.
	Resume(ctx context.Context) (bool, error)
	// Snapshot streams the workspace as a tar archive of workspace-relative paths.
	Snapshot(ctx context.Context) (io.ReadCloser, error)
	// Restore unpacks a Snapshot archive into the workspace.
	Restore(ctx context.Context, archive io.Reader) error
	// Assign gives a blank sandbox to a thread, so Find finds it from then on; it
	// fails with [ErrExists] if the thread already has a sandbox on the host.
	Assign(ctx context.Context, tenant, thread string) error
	// Fence records in the sandbox that the holder of a thread lease with this
	// fencing token acts on it from now on. It fails with [ErrFenced] if a larger
	// token was recorded: the caller's lease is stale. From then on this handle's
	// Pause, Snapshot, Remove and kernel restarts check the token again, atomically
	// with what they do, and fail with [ErrFenced] once a newer owner fenced the
	// sandbox; Remove retires the sandbox so no older owner can adopt it either.
	Fence(ctx context.Context, token int64) error
	// Wipe makes a [Spec.Recyclable] sandbox blank again, for another one-off of the
	// same tenant: every process of the code's user is killed, the workspace, /tmp
	// ($HOME) and shared memory emptied, System V IPC removed, and a fresh
	// interpreter, forked from the preloaded zygote, waits with a clean environment.
	// Any error means the sandbox may still hold something of the runs before:
	// remove it, never reuse it. Other sandboxes fail with [ErrNotRecyclable].
	Wipe(ctx context.Context) error
	// EgressAddr is the sandbox's address on its egress network, the one the egress
	// proxy sees its connections come from; false for a sandbox without egress.
	EgressAddr() (netip.Addr, bool)
	// Release lets go of the sandbox without removing it: the kernel ends, the
	// sandbox and its workspace stay for Find to adopt.
	Release()
	// Remove deletes the sandbox and its workspace; safe to call twice. Give it a
	// context that outlives the caller's cancellation.
	Remove(ctx context.Context) error
}

// Runtime creates and finds sandboxes on one host: what a worker needs.
type Runtime interface {
	// Create starts a sandbox and its kernel; a thread's fails with [ErrExists] if
	// the thread already has one on the host. On failure nothing is left behind.
	Create(ctx context.Context, spec Spec) (Sandbox, error)
	// Find adopts a thread's existing sandbox with a fresh kernel (the workspace
	// survives; the first run reports KernelRestarted), or returns nil, nil.
	Find(ctx context.Context, spec Spec) (Sandbox, error)
	// CreateBlank starts a sandbox for no thread yet, preloaded, for a warm pool, of
	// spec's Owner, Image and Limits; a blank sandbox has no tenant, thread or fence
	// until Assign and Fence, so spec's other fields are ignored.
	CreateBlank(ctx context.Context, spec Spec) (Sandbox, error)
	// Count returns how many sandboxes (blank ones aside) live on this host.
	Count(ctx context.Context) (int, error)
	// Ping says whether the runtime answers; it decides the worker's readiness.
	Ping(ctx context.Context) error
}

// Host lists and opens the sandboxes on one host without touching their kernels:
// what a janitor needs.
type Host interface {
	// List returns every sandbox of this installation on the host, stopped ones too.
	List(ctx context.Context) ([]Info, error)
	// ThreadName returns the name a thread's sandbox has on this host.
	ThreadName(tenant, thread string) string
	// Open returns a handle on a listed sandbox, enough to Snapshot and Remove it; a
	// paused one stays paused. A sandbox gone meanwhile is [ErrNotFound].
	Open(ctx context.Context, id string) (Sandbox, error)
}

// Info describes a sandbox found on a host, without touching it.
type Info struct {
	ID       string
	Name     string
	Tenant   string // empty for blank and pooled sandboxes
	Thread   string
	Owner    string // the worker that created it
	OfThread bool   // it is (or was made for) a thread's: named after the thread
	Blank    bool   // a warm-pool sandbox not given to any thread
	Created  time.Time
	Running  bool
	Paused   bool
}
