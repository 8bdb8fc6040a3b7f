package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/codeinterp/codeinterp/client"
	"github.com/codeinterp/codeinterp/sandbox/journal"
)

// The faults, in the order they are injected.
const (
	FaultWorker = "worker" // SIGKILL the busiest worker, then start it again (a new worker id)
	FaultAPI    = "api"    // SIGKILL the API, then start it again
	FaultRedis  = "redis"  // SIGKILL Redis (AOF everysec), then start it again
	FaultMinIO  = "minio"  // stop MinIO for MinIOOutage, then start it again
)

// AllFaults is every fault, in order.
var AllFaults = []string{FaultWorker, FaultAPI, FaultRedis, FaultMinIO}

// MinIOOutage is how long MinIO stays stopped.
const MinIOOutage = 20 * time.Second

// Event is something the injector did, at a time since the load started.
type Event struct {
	At   time.Duration
	Wall time.Time
	What string
	Err  string `json:",omitempty"`
}

// RedisRecovery is how long Redis's crash kept writes out.
type RedisRecovery struct {
	Killed     time.Time
	Restarted  time.Duration // from the kill until `docker start` returned
	WritesBack time.Duration // from the kill until the API accepted a submission again
	Probes     int           // submissions tried meanwhile
}

// injector injects the faults under load, one at a time.
type injector struct {
	stack *Stack
	load  *load
	probe *client.Client
	start time.Time
	say   func(string)
	warm  int           // thread executions run before the first fault
	over  time.Duration // the load's duration: the longest the first fault waits for warm

	events []Event
	redis  *RedisRecovery
}

// event records a step that began at began.
func (in *injector) event(what string, began time.Time, err error) {
	e := Event{At: began.Sub(in.start).Round(10 * time.Millisecond), Wall: began, What: what}
	if err != nil {
		e.Err = err.Error()
	}
	in.events = append(in.events, e)
	in.say(fmt.Sprintf("%8s since the load began: %s %s", e.At, e.What, e.Err))
}

// do runs one step and records it.
func (in *injector) do(what string, step func() error) {
	began := time.Now()
	in.event(what, began, step())
}

// run injects each fault at its offset since the load started.
func (in *injector) run(ctx context.Context, faults []string, offsets []time.Duration) {
	// Containers keep their ids across kill and start: look them up before the
	// clock matters.
	for _, svc := range []string{"worker1", "worker2", "worker3", "api", "redis", "minio"} {
		if _, err := in.stack.container(ctx, svc); err != nil {
			in.event("look up "+svc, time.Now(), err)
		}
	}
	if len(faults) > 0 && in.warm > 0 {
		// The first fault waits for the load to be under way — every thread with a
		// sandbox, executions flowing — however long that takes on this machine;
		// the others keep their spacing after it.
		if !sleepUntil(ctx, in.start.Add(offsets[0])) {
			return
		}
		shift := in.waitWarm(ctx)
		for i := range offsets {
			offsets[i] += shift
		}
	}
	for i, f := range faults {
		if !sleepUntil(ctx, in.start.Add(offsets[i])) {
			return
		}
		switch f {
		case FaultWorker:
			w := in.busiest()
			in.do("SIGKILL "+w, func() error { return in.stack.Kill(ctx, w) })
			in.do("start "+w, func() error { return in.stack.Start(ctx, w) })
		case FaultAPI:
			in.do("SIGKILL api", func() error { return in.stack.Kill(ctx, "api") })
			in.do("start api", func() error { return in.stack.Start(ctx, "api") })
		case FaultRedis:
			in.crashRedis(ctx)
		case FaultMinIO:
			in.do("stop minio", func() error { return in.stack.Stop(ctx, "minio") })
			sleepUntil(ctx, time.Now().Add(MinIOOutage))
			in.do("start minio", func() error { return in.stack.Start(ctx, "minio") })
		}
	}
}

// waitWarm waits until the workers' journals show in.warm thread executions run, or
// the load's duration passed, and returns how long it waited.
func (in *injector) waitWarm(ctx context.Context) time.Duration {
	began := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for in.threadRuns(time.Time{}, "") < in.warm && time.Since(in.start) < in.over {
		select {
		case <-ctx.Done():
			return 0
		case <-tick.C:
		}
	}
	if waited := time.Since(began).Round(time.Second); waited > 0 {
		in.event(fmt.Sprintf("the load got under way (%d thread executions run); faults start %s later than planned", in.warm, waited), time.Now(), nil)
		return waited
	}
	return 0
}

// threadRuns counts the thread executions the journals of worker (all when "") show
// run since t.
func (in *injector) threadRuns(since time.Time, worker string) int {
	paths, _ := filepath.Glob(filepath.Join(in.stack.JournalDir, worker+"*.jsonl"))
	es, _, _ := journal.ReadFiles(paths...)
	n := 0
	for _, e := range es {
		if e.Op == journal.OpRun && e.Thread != "" && e.OK() && e.End >= since.UnixNano() {
			n++
		}
	}
	return n
}

// busiest returns the worker service that finished the most thread executions in the
// last ten seconds, by its journal, so the kill lands on executions in flight.
func (in *injector) busiest() string {
	best, most := fmt.Sprintf("worker%d", 1+rand.IntN(3)), 0
	since := time.Now().Add(-10 * time.Second)
	for i := 1; i <= 3; i++ {
		w := fmt.Sprintf("worker%d", i)
		if n := in.threadRuns(since, w); n > most {
			best, most = w, n
		}
	}
	return best
}

// crashRedis kills Redis, starts it again as a supervisor would, and measures how
// long the API took to accept a submission again.
func (in *injector) crashRedis(ctx context.Context) {
	r := &RedisRecovery{Killed: time.Now()}
	in.redis = r
	in.event("SIGKILL redis", r.Killed, in.stack.Kill(ctx, "redis"))
	began := time.Now()
	err := in.stack.Start(ctx, "redis")
	r.Restarted = time.Since(r.Killed)
	in.event("start redis", began, err)
	for n := 0; ctx.Err() == nil; n++ {
		r.Probes++
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ex, err := in.probe.Submit(pctx, client.RunRequest{Code: "print('probe')",
			IdempotencyKey: fmt.Sprintf("%s-probe-%d", in.load.run, n)})
		cancel()
		if err == nil {
			r.WritesBack = time.Since(r.Killed)
			in.event(fmt.Sprintf("API accepts writes again (%s after the kill)", r.WritesBack.Round(time.Millisecond)), time.Now(), nil)
			in.load.mu.Lock()
			in.load.accepted = append(in.load.accepted, Accepted{ID: ex.ID, Tenant: "alpha", Index: -1, At: time.Now()})
			in.load.mu.Unlock()
			return
		}
		sleepUntil(ctx, time.Now().Add(100*time.Millisecond))
	}
}
