package janitor

import (
	"context"
	"errors"
	"fmt"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/threadq"
	"github.com/codeinterp/codeinterp/sandbox"
)

// sweepOrphans removes the sandboxes on this host whose worker is gone: blank and
// one-off ones outright, a thread's after snapshotting its workspace, so the thread's
// next execution, on any host, gets its files back.
//
// After the janitor found Redis out of reach, it waits a heartbeat TTL from when
// Redis answers again: every worker's heartbeat is stale after an outage for that
// reason alone, and live workers beat again within a third of the TTL.
func (j *Janitor) sweepOrphans(ctx context.Context, rep *Report) error {
	now := j.cfg.Now()
	workers := j.cfg.Threads
	list, err := j.cfg.Sandboxes.List(ctx)
	if err != nil || len(list) == 0 {
		return err
	}
	// Announce this janitor: it owns, briefly, the threads it reclaims.
	err = workers.Beat(ctx, j.cfg.ID, false)
	j.mu.Lock()
	if err != nil {
		j.beatFailed = true
	} else if j.beatFailed {
		j.beatFailed, j.reclaimFrom = false, now.Add(workers.HeartbeatTTL())
	}
	wait := now.Before(j.reclaimFrom)
	j.mu.Unlock()
	if err != nil || wait {
		return err
	}
	aliveIDs, err := workers.Alive(ctx)
	if err != nil {
		return err
	}
	alive := map[string]bool{}
	for _, w := range aliveIDs {
		alive[w] = true
	}
	byName, err := j.threadNames(ctx)
	if err != nil {
		return err
	}
	// One sandbox that cannot be reclaimed (its code broke it, the engine failed on
	// it) must not hold back the others: each failure is kept, and the sweep goes on.
	var failed []error
	for _, sb := range list {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		old := now.Sub(sb.Created) >= j.cfg.OrphanAge
		var err error
		switch tk, known := byName[sb.Name]; {
		case !sb.OfThread:
			if old && !alive[sb.Owner] {
				err = j.remove(ctx, sb, rep)
			}
		case known:
			err = j.reclaimThread(ctx, tk, sb, rep)
		case old && !alive[sb.Owner] && now.Sub(sb.Created) >= j.cfg.IdleReap:
			// A thread sandbox no active thread names: its thread expired.
			err = j.remove(ctx, sb, rep)
		}
		if err != nil {
			failed = append(failed, fmt.Errorf("reclaim sandbox %s: %w", sb.Name, err))
		}
	}
	if len(failed) > maxFailures {
		failed = append(failed[:maxFailures], fmt.Errorf("and %d more", len(failed)-maxFailures))
	}
	return errors.Join(failed...)
}

// maxFailures bounds the failed reclaims one sweep reports (all are retried next).
const maxFailures = 10

// threadNames maps the container name of every active thread's sandbox to the thread.
func (j *Janitor) threadNames(ctx context.Context) (map[string]jobs.ThreadKey, error) {
	tks, err := j.cfg.Records.ActiveThreads(ctx)
	if err != nil {
		return nil, err
	}
	m := make(map[string]jobs.ThreadKey, len(tks))
	for _, tk := range tks {
		tenant, thread := tk.Split()
		m[j.cfg.Sandboxes.ThreadName(tenant, thread)] = tk
	}
	return m, nil
}

// reclaimThread snapshots and removes a thread's sandbox if no live worker owns the
// thread and no work waits for it. The janitor owns the thread meanwhile, so no
// worker can adopt the sandbox halfway.
func (j *Janitor) reclaimThread(ctx context.Context, tk jobs.ThreadKey, info sandbox.Info, rep *Report) error {
	threads := j.cfg.Threads
	if owner, err := threads.OwnerAlive(ctx, tk); err != nil || owner != "" {
		return err
	}
	lease, inflight, err := threads.Claim(ctx, tk, j.cfg.ID)
	if errors.Is(err, threadq.ErrOwned) {
		return nil
	}
	if err != nil {
		return err
	}
	defer func() { _, _ = threads.Release(context.WithoutCancel(ctx), lease) }()
	if queued, err := threads.Queued(ctx, tk); err != nil || queued > 0 || inflight != "" {
		return err // work waits: a worker will adopt the sandbox as it is
	}
	sb, err := j.cfg.Sandboxes.Open(ctx, info.ID)
	if errors.Is(err, sandbox.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	// Fenced with the janitor's lease, the snapshot and the removal are refused if a
	// worker took the thread over meanwhile (its newer token fences the sandbox).
	if err := sb.Fence(ctx, lease.Token); errors.Is(err, sandbox.ErrFenced) {
		return nil
	} else if err != nil && info.Running {
		return err
	}
	if info.Running {
		rc, err := sb.Snapshot(ctx)
		if err != nil {
			return err
		}
		_, err = j.cfg.Store.Put(ctx, jobs.SnapshotKey(tk), rc, -1, "application/x-tar")
		rc.Close()
		if err != nil {
			return fmt.Errorf("store snapshot of %s: %w", tk, err)
		}
		if err := j.cfg.Records.SetThreadSandbox(ctx, tk, jobs.SandboxNone, true); err != nil {
			return err
		}
		rep.OrphansSaved++
	}
	return j.removeOpen(ctx, sb, info, rep)
}

func (j *Janitor) remove(ctx context.Context, info sandbox.Info, rep *Report) error {
	sb, err := j.cfg.Sandboxes.Open(ctx, info.ID)
	if errors.Is(err, sandbox.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return j.removeOpen(ctx, sb, info, rep)
}

// removeOpen removes an opened sandbox; one fenced by a worker that took its thread
// over meanwhile is that worker's now, and stays.
func (j *Janitor) removeOpen(ctx context.Context, sb sandbox.Sandbox, info sandbox.Info, rep *Report) error {
	if err := sb.Remove(ctx); err != nil {
		if errors.Is(err, sandbox.ErrFenced) {
			return nil
		}
		return err
	}
	rep.OrphansRemoved++
	j.cfg.Logger.Info("removed orphaned sandbox", "name", info.Name, "owner", info.Owner)
	return nil
}
