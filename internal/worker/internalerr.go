package worker

import (
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// internalError is how a failure of the service itself shows on an execution: a
// SandboxError whose message says only that the service failed and gives a reference.
// The error's own words name what no tenant may learn (hosts and ports, buckets and
// keys, the engine's messages, other tenants' sandboxes), so they are logged under
// the same reference, for the operator to find.
func (r *Runner) internalError(ex *jobs.Execution, err error) *sandbox.Error {
	ref := jobs.ErrorRefPrefix.New()
	r.cfg.Logger.Error("execution failed: internal error", "ref", ref, "execution", ex.ID, "tenant", ex.Tenant,
		"thread", ex.ThreadID, "kind", ex.Kind, "err", err)
	return jobs.ErrSandboxError.With("the service failed, not the code (internal error, reference " + ref +
		"); the operator's logs have the details under that reference")
}
