package docker

import (
	"cmp"
	"net/netip"
	"runtime"
	"time"
)

// Config configures a [Runtime].
type Config struct {
	Image string // sandbox image, built from deploy/sandbox
	// Grace is how long an interrupted run may take to stop before its kernel is killed.
	Grace time.Duration
	// StartTimeout bounds creating a sandbox's container, and then, once it has one
	// of the KernelStarts slots, its kernel's start (the wait for a slot is the
	// caller's to bound).
	StartTimeout time.Duration
	// Prefix names containers and volumes and scopes the label filter, so several
	// installations (or test runs) can share one Runtime engine.
	Prefix string
	// KernelStarts bounds the kernels starting at once on the host (a start imports
	// numpy, pandas and matplotlib: seconds of CPU); default the number of CPUs. More
	// at once only makes each slower, until a start outlasts its deadline.
	KernelStarts int
	// Runtime is the OCI runtime the engine starts sandboxes with, by the name it is
	// registered under: "runc" (Docker's own) or "runsc" (gVisor, deploy/runsc.sh).
	Runtime string
	// CgroupParent is the cgroup every sandbox is created under, so that all of them
	// together weigh one service container (weights.go). Empty: chosen by the engine's
	// cgroup driver, "/docker/codeinterp-sandboxes" under cgroupfs (beside the
	// services' containers) or "codeinterp-sandboxes.slice" under systemd; "none":
	// the engine's default parent, each sandbox weighing one service container.
	CgroupParent string
	// EgressProxy is the running container of the egress proxy, which each sandbox
	// made with Spec.Egress shares a network with (egress.go); empty: no egress.
	EgressProxy string
	// EgressRuntime is the OCI runtime of sandboxes with egress; default Runtime, or
	// under gVisor Runtime+"-egress" (deploy/runsc.sh registers runsc-egress: gVisor
	// passing the code's sockets to the host kernel inside the container's network
	// namespace, as its own network stack cannot start on this machine kind).
	EgressRuntime string
	// EgressPort is the proxy's port; default 3128.
	EgressPort int
	// EgressSubnets is the range egress networks are carved from, a /29 each;
	// default 10.213.0.0/16 (8192 networks). It must not overlap the host's own.
	EgressSubnets netip.Prefix
}

func (c Config) withDefaults() Config {
	return Config{
		Image:        cmp.Or(c.Image, "codeinterp/sandbox:latest"),
		Grace:        cmp.Or(c.Grace, 2*time.Second),
		StartTimeout: cmp.Or(c.StartTimeout, 60*time.Second),
		Prefix:       cmp.Or(c.Prefix, "codeinterp"),
		KernelStarts: cmp.Or(c.KernelStarts, runtime.NumCPU()),
		Runtime:      cmp.Or(c.Runtime, "runc"),
		CgroupParent: c.CgroupParent,
		EgressProxy:  c.EgressProxy,
		EgressRuntime: cmp.Or(c.EgressRuntime, func() string {
			if runtime := cmp.Or(c.Runtime, "runc"); isGVisor(runtime) {
				return runtime + "-egress"
			}
			return cmp.Or(c.Runtime, "runc")
		}()),
		EgressPort: cmp.Or(c.EgressPort, 3128),
		EgressSubnets: func() netip.Prefix {
			if c.EgressSubnets.IsValid() {
				return c.EgressSubnets
			}
			return netip.MustParsePrefix("10.213.0.0/16")
		}(),
	}
}
