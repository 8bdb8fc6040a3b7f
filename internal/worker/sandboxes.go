// Package worker holds glue of the worker binary that fits no library package.
package worker

import (
	"context"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// NewSandbox adapts the Docker runtime's Create to jobs.
func NewSandbox(d *sandbox.Docker) func(context.Context, sandbox.Spec) (jobs.Sandbox, error) {
	return func(ctx context.Context, spec sandbox.Spec) (jobs.Sandbox, error) {
		return d.Create(ctx, spec)
	}
}

// FindSandbox adapts the Docker runtime's Find to jobs, keeping "none" a nil interface.
func FindSandbox(d *sandbox.Docker) func(context.Context, sandbox.Spec) (jobs.Sandbox, error) {
	return func(ctx context.Context, spec sandbox.Spec) (jobs.Sandbox, error) {
		sb, err := d.Find(ctx, spec)
		if sb == nil {
			return nil, err
		}
		return sb, nil
	}
}
