package docker

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"

	"github.com/codeinterp/codeinterp/sandbox"
)

// Labels every sandbox carries. Docker is the source of truth for which sandboxes
// exist; these labels say whose they are.
const (
	LabelInstall = "codeinterp.install" // Config.Prefix of the installation that made it
	LabelTenant  = "codeinterp.tenant"
	LabelThread  = "codeinterp.thread"
	LabelOwner   = "codeinterp.owner" // the worker that created it
	// LabelPool marks a blank sandbox of a warm pool, not yet given to a thread, or a
	// recyclable one-off sandbox (never given to one).
	LabelPool = "codeinterp.pool"
	// LabelRecyclable marks a recyclable one-off sandbox (sandbox.Spec.Recyclable).
	LabelRecyclable = "codeinterp.recyclable"
)

// threadName is the container name of a thread's sandbox: one per thread and engine,
// derived from the exact tenant and thread so that finding it re-checks both.
func threadName(prefix, tenant, thread string) string {
	sum := sha256.Sum256([]byte(tenant + "\x00" + thread))
	return prefix + "-t-" + hex.EncodeToString(sum[:16])
}

// Runtime creates sandboxes on one Docker engine: the [sandbox.Runtime] and
// [sandbox.Host] of a Docker host.
type Runtime struct {
	cli    *client.Client
	cfg    Config
	starts chan struct{} // a token per kernel starting now (Config.KernelStarts)
	// runtimeSeen records that the engine listed cfg.Runtime once.
	runtimeSeen atomic.Bool
	weights     *weights

	parentMu sync.Mutex
	parent   *string // the resolved cgroup parent (cgroupParent); nil until known
}

var (
	_ sandbox.Runtime = (*Runtime)(nil)
	_ sandbox.Host    = (*Runtime)(nil)
	_ sandbox.Sandbox = (*Sandbox)(nil)
)

// New returns a runtime using cli. It does no I/O.
func New(cli *client.Client, cfg Config) *Runtime {
	cfg = cfg.withDefaults()
	return &Runtime{cli: cli, cfg: cfg, starts: make(chan struct{}, cfg.KernelStarts), weights: newWeights(dockerShares(cli, cfg.Runtime))}
}

// Sandbox is one running container with its kernel. Its methods are safe for
// concurrent use; runs are serialised.
type Sandbox struct {
	d       *Runtime
	id      string // container id
	name    string
	volume  string
	egress  egressNet // its egress network; zero: none
	spec    sandbox.Spec
	limits  sandbox.Limits
	started time.Time

	mu     sync.Mutex
	token  int64   // the fencing token this handle acts under (fence.go); 0: none
	kernel *kernel // nil after the kernel died or was killed; restarted by the next run
	// restartPending makes the next run report KernelRestarted: the sandbox was
	// adopted with a fresh kernel.
	restartPending bool
	paused         bool
	// skills: a skill was put into the skills tmpfs (a Wipe empties it);
	// skillsLinked: the workspace's skills/ links to it (skills.go).
	skills, skillsLinked bool
}

// ID returns the container id.
func (s *Sandbox) ID() string { return s.id }

// ErrRuntimeMissing means the engine has no OCI runtime by the configured name.
var ErrRuntimeMissing = errors.New("sandbox runtime not registered with the Docker engine")

// Ping checks that the engine answers, knows the configured OCI runtime and has the
// sandbox image.
func (d *Runtime) Ping(ctx context.Context) error {
	if _, err := d.cli.Ping(ctx); err != nil {
		return fmt.Errorf("docker ping: %w", err)
	}
	if err := d.checkRuntime(ctx); err != nil {
		return err
	}
	if _, err := d.cli.ImageInspect(ctx, d.cfg.Image); err != nil {
		if client.IsErrNotFound(err) {
			return fmt.Errorf("%w: %s (build it with `make images`)", sandbox.ErrImageMissing, d.cfg.Image)
		}
		return fmt.Errorf("inspect sandbox image: %w", err)
	}
	return nil
}

// checkRuntime fails unless the engine knows the configured OCI runtime. Once it has
// (a registration stays), later pings skip the engine's costlier info call.
func (d *Runtime) checkRuntime(ctx context.Context) error {
	if d.runtimeSeen.Load() {
		return nil
	}
	info, err := d.cli.Info(ctx)
	if err != nil {
		return fmt.Errorf("docker info: %w", err)
	}
	wanted := []string{d.cfg.Runtime}
	if d.cfg.EgressProxy != "" {
		wanted = append(wanted, d.cfg.EgressRuntime)
	}
	for _, rt := range wanted {
		if _, ok := info.Runtimes[rt]; !ok {
			return fmt.Errorf("%w: %q (registered: %s); for gVisor run deploy/runsc.sh (`make runsc`) as root",
				ErrRuntimeMissing, rt, strings.Join(slices.Sorted(maps.Keys(info.Runtimes)), ", "))
		}
	}
	d.runtimeSeen.Store(true)
	return nil
}

// Create starts a sandbox and its kernel. On failure nothing is left behind.
func (d *Runtime) Create(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	sb, err := d.create(ctx, spec, false)
	if err != nil {
		return nil, err
	}
	return sb, nil
}

// create starts a sandbox; pool marks a blank one for a warm pool.
func (d *Runtime) create(ctx context.Context, spec sandbox.Spec, pool bool) (_ *Sandbox, err error) {
	caller := ctx // the kernel start bounds its own time, not its wait for a slot
	ctx, cancel := context.WithTimeout(ctx, d.cfg.StartTimeout)
	defer cancel()
	limits := spec.Limits.WithDefaults()
	image := cmp.Or(spec.Image, d.cfg.Image)
	name := d.cfg.Prefix + "-" + randomHex(8)
	if spec.Thread != "" {
		name = threadName(d.cfg.Prefix, spec.Tenant, spec.Thread)
	}
	labels := map[string]string{
		LabelInstall: d.cfg.Prefix,
		LabelTenant:  spec.Tenant,
		LabelThread:  spec.Thread,
		LabelOwner:   spec.Owner,
	}
	if pool || spec.Recyclable {
		labels[LabelPool] = "1"
	}
	if spec.Recyclable {
		if spec.Thread != "" {
			return nil, fmt.Errorf("create sandbox: a thread's sandbox cannot be recyclable")
		}
		labels[LabelRecyclable] = "1"
	}

	parent, err := d.cgroupParent(ctx)
	if err != nil {
		return nil, err
	}
	var undo []func(context.Context)
	defer func() {
		if err != nil {
			cleanupCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i](cleanupCtx)
			}
		}
	}()

	vol, err := d.cli.VolumeCreate(ctx, volume.CreateOptions{
		Name: d.cfg.Prefix + "-ws-" + randomHex(8), Driver: "local", DriverOpts: volumeOptions(limits), Labels: labels,
	})
	if err != nil {
		return nil, fmt.Errorf("create workspace volume: %w", err)
	}
	undo = append(undo, func(ctx context.Context) { _ = d.cli.VolumeRemove(ctx, vol.Name, true) })

	cfg := &container.Config{
		Image:           image,
		Cmd:             keeperCmd(spec.Fence),
		User:            keeperUser,
		WorkingDir:      "/workspace",
		Labels:          maps.Clone(labels),
		NetworkDisabled: true,
	}
	runtime := d.cfg.Runtime
	if spec.Egress {
		runtime = d.cfg.EgressRuntime
	}
	hc := hostConfig(limits, vol.Name, runtime, parent)
	var netCfg *network.NetworkingConfig
	var egress egressNet
	if spec.Egress {
		if pool {
			return nil, fmt.Errorf("create sandbox: a blank sandbox never has egress")
		}
		if egress, err = d.createEgressNet(ctx, labels); err != nil {
			return nil, err
		}
		undo = append(undo, func(ctx context.Context) { _ = d.removeEgressNet(ctx, egress.name) })
		cfg.NetworkDisabled, cfg.Env = false, egress.proxyEnv(d.cfg.EgressPort)
		hc.NetworkMode = container.NetworkMode(egress.name)
		netCfg = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			egress.name: {IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: egress.sandbox.String()}},
		}}
	}
	created, err := d.cli.ContainerCreate(ctx, cfg, hc, netCfg, nil, name)
	if err != nil {
		switch {
		case client.IsErrNotFound(err):
			return nil, fmt.Errorf("%w: %s: %v", sandbox.ErrImageMissing, image, err)
		case errdefs.IsConflict(err):
			return nil, fmt.Errorf("%w: %s", sandbox.ErrExists, name)
		}
		return nil, fmt.Errorf("create sandbox container: %w", err)
	}
	undo = append(undo, func(ctx context.Context) {
		_ = d.cli.ContainerRemove(ctx, created.ID, container.RemoveOptions{Force: true})
	})
	if err := d.cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return nil, fmt.Errorf("start sandbox container: %w", err)
	}

	s := &Sandbox{d: d, id: created.ID, name: name, volume: vol.Name, egress: egress, spec: spec, limits: limits, started: time.Now(), token: spec.Fence}
	if s.kernel, err = d.startKernel(caller, created.ID, kernelMode(spec), s.token); err != nil {
		return nil, fmt.Errorf("start kernel in %s: %w", name, errFencedStart(name, err))
	}
	if !pool {
		d.weights.join(spec.Tenant, s.id, baseShares)
	}
	return s, nil
}

// Release lets go of the sandbox without removing it: the kernel ends, the container
// and its workspace stay for [Runtime.Find] to adopt.
func (s *Sandbox) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kernel != nil {
		s.kernel.close()
		s.kernel = nil
	}
	s.d.weights.leave(s.spec.Tenant, s.id)
}

// Remove deletes the sandbox, its kernel and its workspace. It is safe to call twice
// and should be given a context that outlives the caller's cancellation.
//
// A sandbox under a token is retired first, so no older owner adopts it while it
// goes, and a newer owner's sandbox is never removed by an older one: a newer token
// refuses the removal ([sandbox.ErrFenced]). A retire that fails otherwise (its exec
// cannot start because the code holds every pid, the keeper cannot run, the engine
// failed it) does not keep the sandbox: no owner could fence or adopt it either, so
// it is removed all the same, or the code could make its sandbox outlive every idle
// reap, eviction and DELETE.
func (s *Sandbox) Remove(ctx context.Context) error {
	s.mu.Lock()
	if s.token > 0 {
		err := s.raiseLocked(ctx, s.token, true)
		if errors.Is(err, sandbox.ErrFenced) || (err != nil && ctx.Err() != nil) {
			s.mu.Unlock()
			return err
		}
	}
	if s.kernel != nil {
		s.kernel.close()
		s.kernel = nil
	}
	s.d.weights.leave(s.spec.Tenant, s.id)
	s.mu.Unlock()
	err := retryTransient(ctx, func() error {
		return s.d.cli.ContainerRemove(ctx, s.id, container.RemoveOptions{Force: true})
	})
	if err != nil && !client.IsErrNotFound(err) {
		return fmt.Errorf("remove sandbox %s: %w", s.name, err)
	}
	if s.volume == "" {
		return s.d.removeEgressNet(ctx, s.egress.name)
	}
	err = retryTransient(ctx, func() error { return s.d.cli.VolumeRemove(ctx, s.volume, true) })
	if err != nil && !client.IsErrNotFound(err) {
		return fmt.Errorf("remove workspace %s: %w", s.volume, err)
	}
	return s.d.removeEgressNet(ctx, s.egress.name)
}

// removeRetryFor bounds how long a removal is retried while the engine is still
// tearing the container down.
const removeRetryFor = 15 * time.Second

// retryTransient calls op until it succeeds, fails for a reason that lasts, or
// removeRetryFor passes. Under gVisor the engine can briefly report the sandbox's
// process as a zombie it "can not kill" while containerd is still reaping it, and
// a volume stays "in use" until the container is fully gone; both clear by
// themselves within moments, so a single try would leak the sandbox.
func retryTransient(ctx context.Context, op func() error) error {
	deadline := time.Now().Add(removeRetryFor)
	wait := 50 * time.Millisecond
	for {
		err := op()
		if err == nil || !transientRemoval(err) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

func transientRemoval(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "is zombie") ||
		strings.Contains(msg, "already in progress") ||
		strings.Contains(msg, "volume is in use")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
