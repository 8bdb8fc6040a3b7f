// Package janitor is the one place that reclaims resources: it asks owners to pause
// idle thread sandboxes and to snapshot and remove long-idle ones, removes sandboxes
// whose worker died (keeping a snapshot of a thread's workspace), settles executions
// that nothing would ever run or end, and deletes expired artifacts and index
// entries. Each sweep is idempotent, and several janitors (one per host) may sweep at
// once.
//
// It sees its host's sandboxes through sandbox.Host and the one-off task queue through
// Tasks (both injected), Redis through jobs/records and jobs/threadq; it knows nothing
// of HTTP, of a runtime's client or of asynq.
package janitor

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/records"
	"github.com/codeinterp/codeinterp/jobs/threadq"
	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/storage"
)

// Storage is what the janitor needs of artifact storage; *storage.Store provides it.
type Storage interface {
	Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) (storage.Object, error)
	DeleteBefore(ctx context.Context, prefix string, before time.Time) (int, error)
	DeletePrefix(ctx context.Context, prefix string) (int, error)
	Retention() time.Duration
	URLTTL() time.Duration
}

// Config configures a Janitor.
type Config struct {
	Records   *records.Store
	Threads   *threadq.Queue
	Sandboxes sandbox.Host
	Store     Storage
	// Tasks is the one-off task queue, for the stuck sweep; nil: stuck one-offs are
	// left alone (thread items are still settled).
	Tasks     Tasks
	ID        string        // this janitor's id, as an owner of threads it reclaims
	IdlePause time.Duration // pause a thread's sandbox idle this long; default 60 s
	IdleReap  time.Duration // snapshot and remove one idle this long; default 30 min
	// OrphanAge is how old a sandbox of a dead worker must be before it is removed,
	// so one being created is never taken for an orphan; default 1 min.
	OrphanAge time.Duration
	// StuckAfter is how long an execution may stay queued or running before the
	// stuck sweep looks at it; default 10 min.
	StuckAfter time.Duration
	// ExpireEvery bounds how often the (costly) artifact and index expiry runs,
	// across all janitors; default 1 h.
	ExpireEvery time.Duration
	Logger      *slog.Logger
	Now         func() time.Time
}

// Janitor sweeps on a schedule.
type Janitor struct {
	cfg Config
	// beatFailed and reclaimFrom hold orphan reclamation back after Redis was out of
	// reach (see sweepOrphans).
	mu          sync.Mutex
	beatFailed  bool
	reclaimFrom time.Time
}

// New returns a Janitor. It does no I/O.
func New(cfg Config) *Janitor {
	cfg.IdlePause = cmp.Or(cfg.IdlePause, time.Minute)
	cfg.IdleReap = cmp.Or(cfg.IdleReap, 30*time.Minute)
	cfg.OrphanAge = cmp.Or(cfg.OrphanAge, time.Minute)
	cfg.StuckAfter = cmp.Or(cfg.StuckAfter, 10*time.Minute)
	cfg.ExpireEvery = cmp.Or(cfg.ExpireEvery, time.Hour)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Janitor{cfg: cfg}
}

// Report counts what one sweep did.
type Report struct {
	PauseRequested   int // idle threads whose owner was asked to pause the sandbox
	ReapRequested    int // long-idle threads whose owner was asked to snapshot and remove it
	OrphansRemoved   int // sandboxes of dead workers removed (blank, one-off or thread)
	OrphansSaved     int // of those, threads whose workspace was snapshotted first
	StuckRequeued    int // queued one-offs whose task was lost, queued again
	StuckEnded       int // executions nothing would ever end, ended failed (WorkerLost)
	ActiveDropped    int // ended or expired executions dropped from a tenant's active index
	CopiesDeleted    int // copies made for readers, deleted once their links expired
	NetworksRemoved  int // egress networks whose sandbox was gone
	ArtifactsExpired int
	EntriesExpired   int64
}

// Run sweeps every interval until ctx ends.
func (j *Janitor) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		j.Sweep(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep runs every sweep once, logs and counts what it did, and returns it.
func (j *Janitor) Sweep(ctx context.Context) Report {
	var rep Report
	start := j.cfg.Now()
	steps := []struct {
		name string
		run  func(context.Context, *Report) error
	}{
		{"idle", j.sweepIdle},
		{"orphans", j.sweepOrphans},
		{"stuck", j.sweepStuck},
		{"networks", j.sweepNetworks},
		{"copies", j.sweepCopies},
		{"expiry", j.sweepExpired},
	}
	for _, s := range steps {
		if err := s.run(ctx, &rep); err != nil {
			sweepErrors.WithLabelValues(s.name).Inc()
			j.cfg.Logger.Error("janitor sweep", "sweep", s.name, "err", err)
		}
	}
	record(rep)
	j.cfg.Logger.Info("janitor sweep done", "took", j.cfg.Now().Sub(start).Round(time.Millisecond),
		"pause_requested", rep.PauseRequested, "reap_requested", rep.ReapRequested,
		"orphans_removed", rep.OrphansRemoved, "orphans_snapshotted", rep.OrphansSaved,
		"stuck_requeued", rep.StuckRequeued, "stuck_ended", rep.StuckEnded, "active_dropped", rep.ActiveDropped,
		"copies_deleted", rep.CopiesDeleted, "networks_removed", rep.NetworksRemoved,
		"artifacts_expired", rep.ArtifactsExpired, "entries_expired", rep.EntriesExpired)
	return rep
}

// idlePage is how many idle threads sweepIdle reads at a time.
const idlePage = 500

// sweepIdle asks live owners to pause idle sandboxes and to reap long-idle ones. The
// request is an item in the thread's queue, so it never lands during an execution.
// It pages through every thread idle for IdlePause, however many it leaves alone.
func (j *Janitor) sweepIdle(ctx context.Context, rep *Report) error {
	now := j.cfg.Now()
	for offset := int64(0); ; offset += idlePage {
		idle, err := j.cfg.Records.ActiveSince(ctx, now.Add(-j.cfg.IdlePause), offset, idlePage)
		if err != nil {
			return err
		}
		for _, a := range idle {
			if err := j.askIdle(ctx, a, now, rep); err != nil {
				return err
			}
		}
		if len(idle) < idlePage {
			return nil
		}
	}
}

// askIdle asks the live owner of one idle thread to pause or reap its sandbox, if it
// has one and no work waits.
func (j *Janitor) askIdle(ctx context.Context, a records.Activity, now time.Time, rep *Report) error {
	tk := a.Thread
	st, err := j.cfg.Records.ThreadState(ctx, tk)
	if err != nil {
		return err
	}
	threads := j.cfg.Threads
	owner, err := threads.OwnerAlive(ctx, tk)
	if err != nil {
		return err
	}
	if st == nil || owner == "" {
		return nil // no sandbox state, or an orphan: sweepOrphans handles those
	}
	// Work waiting, or an item running (however long): the thread is not idle.
	if st, err := threads.State(ctx, tk); err != nil || len(st.Queued) > 0 || st.Inflight != "" {
		return err
	}
	var kind jobs.Kind
	switch {
	case (st.Sandbox == jobs.SandboxRunning || st.Sandbox == jobs.SandboxPaused) && now.Sub(a.LastActive) >= j.cfg.IdleReap:
		kind, rep.ReapRequested = jobs.KindReap, rep.ReapRequested+1
	case st.Sandbox == jobs.SandboxRunning:
		kind, rep.PauseRequested = jobs.KindPause, rep.PauseRequested+1
	default:
		return nil
	}
	if err := j.cfg.Records.EnqueueLifecycle(ctx, tk, kind); err != nil {
		return fmt.Errorf("queue %s on %s: %w", kind, tk, err)
	}
	return nil
}

// copyMargin is how long a copy made for a reader outlives the download link the API
// gave for it: the link is signed after the copy is stored, which takes a while for a
// large file.
const copyMargin = 5 * time.Minute

// copyBatch is how many copies sweepCopies reads at a time.
const copyBatch = 200

// sweepCopies deletes the copies of workspace files made for readers (a thread's file
// got over the API) once their download links have expired: they were made for one
// reader, and are not kept for the retention. Janitors sweeping at once delete the
// same copies, which is harmless.
func (j *Janitor) sweepCopies(ctx context.Context, rep *Report) error {
	cutoff := j.cfg.Now().Add(-j.cfg.Store.URLTTL() - copyMargin)
	for {
		due, err := j.cfg.Records.CopiesBefore(ctx, cutoff, copyBatch)
		if err != nil || len(due) == 0 {
			return err
		}
		for _, prefix := range due {
			if _, err := j.cfg.Store.DeletePrefix(ctx, prefix); err != nil {
				return fmt.Errorf("delete copy %s: %w", prefix, err)
			}
			rep.CopiesDeleted++
		}
		if err := j.cfg.Records.ForgetCopies(ctx, due...); err != nil || len(due) < copyBatch {
			return err
		}
	}
}

// sweepExpired deletes expired artifacts and index entries, once per ExpireEvery
// across all janitors.
func (j *Janitor) sweepExpired(ctx context.Context, rep *Report) error {
	ok, err := j.cfg.Records.TryLock(ctx, "expiry", j.cfg.ExpireEvery)
	if err != nil || !ok {
		return err
	}
	now := j.cfg.Now()
	n, err := j.cfg.Records.Expire(ctx, now)
	rep.EntriesExpired = n
	if err != nil {
		return err
	}
	// The bucket's lifecycle rule deletes expired objects too, but S3 applies it only
	// about once a day.
	deleted, err := j.cfg.Store.DeleteBefore(ctx, "", now.Add(-j.cfg.Store.Retention()))
	rep.ArtifactsExpired = deleted
	return err
}
