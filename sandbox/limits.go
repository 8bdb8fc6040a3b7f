package sandbox

import "cmp"

// Limits bound what one sandbox may use. Zero fields take the defaults below.
type Limits struct {
	Memory    int64   // bytes of RAM, no swap; workspace and /tmp pages count against it
	CPUs      float64 // CPU cores
	Pids      int64   // processes and threads
	Workspace int64   // bytes in /workspace
	Tmp       int64   // bytes in /tmp
	Output    int     // bytes of stdout, and of stderr, kept in an Outcome
}

// Default limits, from the design notes.
const (
	DefaultMemory    = 512 << 20
	DefaultCPUs      = 1.0
	DefaultPids      = 128
	DefaultWorkspace = 100 << 20
	DefaultTmp       = 64 << 20
	DefaultOutput    = 1 << 20
)

// WithDefaults returns l with zero fields set to the defaults.
func (l Limits) WithDefaults() Limits {
	return Limits{
		Memory:    cmp.Or(l.Memory, DefaultMemory),
		CPUs:      cmp.Or(l.CPUs, DefaultCPUs),
		Pids:      cmp.Or(l.Pids, DefaultPids),
		Workspace: cmp.Or(l.Workspace, DefaultWorkspace),
		Tmp:       cmp.Or(l.Tmp, DefaultTmp),
		Output:    cmp.Or(l.Output, DefaultOutput),
	}
}
