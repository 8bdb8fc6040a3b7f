// Package worker holds glue of the worker binary that fits no library package.
package worker

import (
	"context"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// Runtime adapts the Docker sandbox runtime to what jobs needs.
type Runtime struct{ D *sandbox.Docker }

var _ jobs.Runtime = Runtime{}

// Create creates a sandbox.
func (r Runtime) Create(ctx context.Context, spec sandbox.Spec) (jobs.Sandbox, error) {
	sb, err := r.D.Create(ctx, spec)
	if sb == nil {
		return nil, err
	}
	return sb, err
}

// Find adopts a thread's sandbox, keeping "none" a nil interface.
func (r Runtime) Find(ctx context.Context, spec sandbox.Spec) (jobs.Sandbox, error) {
	sb, err := r.D.Find(ctx, spec)
	if sb == nil {
		return nil, err
	}
	return sb, nil
}

// CreateBlank creates a sandbox for the warm pool.
func (r Runtime) CreateBlank(ctx context.Context, owner string, limits sandbox.Limits) (jobs.Sandbox, error) {
	sb, err := r.D.CreateBlank(ctx, owner, limits)
	if sb == nil {
		return nil, err
	}
	return sb, nil
}

// Count counts the sandboxes on this host.
func (r Runtime) Count(ctx context.Context) (int, error) { return r.D.Count(ctx) }

// Ping checks the engine and the sandbox image.
func (r Runtime) Ping(ctx context.Context) error { return r.D.Ping(ctx) }
