package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/sandbox"
)

// ProcessOneOff is the handler of [jobs.TypeRun]: it runs a one-off execution in a
// sandbox no other tenant's code ever ran in (see oneOffSandbox), removed or wiped for
// the tenant's next one-off in the same profile afterwards. It returns an error only
// when the run should be retried: the sandbox could not be prepared and the code
// never started, or it is postponed (ErrTenantBusy).
func (r *Runner) ProcessOneOff(ctx context.Context, t *asynq.Task) error {
	p, err := jobs.DecodePayload(t)
	if err != nil {
		return err
	}
	ex, err := r.cfg.Records.Get(ctx, "", p.ID)
	if errors.Is(err, records.ErrNotFound) {
		r.cfg.Logger.Warn("execution record gone; dropping task", "execution", p.ID)
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case ex.Status.Terminal():
		return nil // a duplicate delivery
	case ex.Status == jobs.Running:
		// An earlier attempt started the code and its worker died. Code is not
		// idempotent, so it is not run again.
		return r.finish(ctx, ex, jobs.Failed, jobs.ErrWorkerLost.With(
			"the worker running this execution stopped before it finished; it was not re-run because the code may already have had effects"))
	}
	if _, err := r.profileOf(ex.Profile); err != nil {
		return r.finish(ctx, ex, jobs.Failed, r.internalError(ex, err)) // retrying would not help
	}
	if !r.oneOffs.take(ex.Tenant) {
		return ErrTenantBusy
	}
	defer r.oneOffs.release(ex.Tenant)
	err = r.run(ctx, ex)
	if err == nil {
		return nil
	}
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	if retried < maxRetry && ctx.Err() == nil {
		return err
	}
	return r.finish(ctx, ex, jobs.Failed, r.internalError(ex, err))
}

// run prepares a sandbox and runs ex in it. An error means the code did not start.
func (r *Runner) run(ctx context.Context, ex *jobs.Execution) (err error) {
	prof, err := r.profileOf(ex.Profile)
	if err != nil {
		return err
	}
	var sb sandbox.Sandbox
	if ex.Egress != nil {
		sb, err = r.egressSandbox(ctx, ex, prof)
	} else {
		sb, err = r.oneOffSandbox(ctx, ex.Tenant, prof)
	}
	if isNoEgress(err) {
		return r.finish(ctx, ex, jobs.Failed, errNoEgress) // retrying would not help
	}
	if err != nil {
		return fmt.Errorf("create sandbox: %w", err)
	}
	reusable := false
	defer func() { r.doneWith(ctx, ex.Tenant, prof.Name, sb, reusable) }()
	var before func(context.Context, sandbox.Outcome)
	if ex.Egress != nil {
		forget, err := r.registerEgress(ctx, sb, ex)
		if err != nil {
			return err
		}
		defer forget()
		before = func(ctx context.Context, _ sandbox.Outcome) { r.readLedger(ctx, ex) }
	}
	if err := r.putInputs(ctx, sb, ex); err != nil {
		return err
	}
	if err := r.attachSkills(ctx, sb, ex, nil); err != nil {
		var us errSkill
		if errors.As(err, &us) { // not the service's failure: no retry
			return r.finish(ctx, ex, jobs.Failed, r.skillFailure(ex, err))
		}
		return err
	}
	if ok, err := r.start(ctx, ex); err != nil || !ok {
		return err
	}
	// From here on the code may run: no error may reach asynq, or it would run twice.
	_, err = r.execute(ctx, sb, ex, before)
	reusable = err == nil && ex.Egress == nil // an egress sandbox serves one execution
	return nil
}

// oneOffSandbox returns a sandbox of profile p for a one-off of tenant, the quickest
// first: one of the tenant's own wiped sandboxes of p; one from p's one-off pool,
// which no code ran in; a new one. Only a sandbox that served this tenant alone, in
// this profile, is ever recycled for it: another profile's has another image and
// other limits.
func (r *Runner) oneOffSandbox(ctx context.Context, tenant string, p jobs.Profile) (sandbox.Sandbox, error) {
	if r.cfg.Recycle {
		if sb := r.recycled.take(tenant, p.Name); sb != nil {
			return sb, nil
		}
	}
	if sb := r.oneOffPools[p.Name].take(); sb != nil {
		return sb, nil
	}
	return r.cfg.Runtime.Create(ctx, r.oneOffSpec(tenant, p, r.cfg.Recycle))
}

// oneOffSpec is the spec of a one-off sandbox of profile p for tenant ("": for a
// pool, no tenant yet).
func (r *Runner) oneOffSpec(tenant string, p jobs.Profile, recyclable bool) sandbox.Spec {
	return sandbox.Spec{Tenant: tenant, Owner: r.cfg.Worker, Image: p.Image, Limits: p.Limits, Recyclable: recyclable}
}

// doneWith wipes a one-off's sandbox of profile and keeps it idle for the tenant's
// next one-off in that profile if it may be recycled, and removes it otherwise:
// recycling is off, the sandbox broke or the wipe failed (it may hold something of
// the run), the worker stops, or the tenant has enough idle already. The outcome is
// recorded by now, so the wipe costs the client nothing.
func (r *Runner) doneWith(ctx context.Context, tenant, profile string, sb sandbox.Sandbox, reusable bool) {
	ctx = context.WithoutCancel(ctx)
	if !reusable || !r.cfg.Recycle || r.shuttingDown() {
		r.removeSandbox(ctx, sb)
		return
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	err := sb.Wipe(wctx)
	cancel()
	if err != nil {
		if !errors.Is(err, sandbox.ErrNotRecyclable) {
			r.cfg.Logger.Warn("wipe one-off sandbox; removing it", "sandbox", sb.ID(), "err", err)
		}
		r.removeSandbox(ctx, sb)
		return
	}
	r.removeAll(ctx, r.recycled.put(tenant, profile, sb, r.cfg.Now()))
}
