// Package faults is the fault suite (`make test-faults`, cmd/faults): it starts the
// whole stack with three workers on compose (deploy/faults), runs a continuous load of
// thread executions and one-offs, and meanwhile SIGKILLs a worker, SIGKILLs the API,
// crashes Redis (AOF everysec) and stops MinIO for 20 s. Then it checks, from what the
// sandboxes themselves recorded, that every accepted execution ended, none ran twice,
// each thread's ran in order and never overlapped, none was lost, and — from the
// sandbox operations journal (sandbox/journal) — that no two workers acted on a
// thread's sandbox at once and fencing tokens never went back.
//
// It drives the stack from outside, through the API, the docker CLI and compose, like
// an operator: it imports no part of the service but the client and the journal.
package faults

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/codeinterp/codeinterp/client"
)

// Config is one run of the suite.
type Config struct {
	Stack       Stack
	Threads     int           // threads under load
	Each        int           // executions per thread
	Over        time.Duration // each thread's executions are spread over this long
	OneOffEvery time.Duration // a one-off is submitted this often while threads load
	Faults      []string      // which of AllFaults to inject, in order
	Drain       time.Duration // how long to wait for every accepted execution to end
	Dir         string        // where the journals, the services' logs and the summary go
	Keep        bool          // leave the stack running afterwards
}

// faultAt is when each fault is injected, as a share of the load's duration: after
// the thread sandboxes exist, each with time to recover before the next, all under load.
// The first also waits until a tenth of the thread executions ran (injector.waitWarm),
// and the others move with it.
var faultAt = map[string]float64{FaultWorker: 0.2, FaultAPI: 0.4, FaultRedis: 0.6, FaultMinIO: 0.75}

// Run runs the suite and returns what it found; an error means it could not run.
func Run(ctx context.Context, cfg Config, progress func(string)) (*Result, error) {
	jdir, err := filepath.Abs(filepath.Join(cfg.Dir, "journal"))
	if err != nil {
		return nil, err
	}
	// The workers and the janitor write their journals here as their own user
	// (uid 10001, deploy/server/Dockerfile), not this process's.
	if err := os.MkdirAll(jdir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Chmod(jdir, 0o777); err != nil {
		return nil, err
	}
	st := cfg.Stack
	st.JournalDir = jdir
	res := &Result{Config: cfg}
	began := time.Now()
	progress(fmt.Sprintf("starting the stack (project %s, API %s, sandbox prefix %s)", st.Project, st.URL(), st.Prefix))
	if err := st.Up(ctx); err != nil {
		return nil, err
	}
	defer func() {
		cleanup := context.WithoutCancel(ctx)
		if err := st.Logs(cleanup, filepath.Join(cfg.Dir, "compose.log")); err != nil {
			progress("saving the services' logs: " + err.Error())
		}
		if !cfg.Keep {
			if err := st.Down(cleanup); err != nil {
				progress("removing the stack: " + err.Error())
			}
		}
	}()
	res.Timings.Up = time.Since(began)

	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128, MaxConnsPerHost: 256}}
	clients := map[string]*client.Client{
		"alpha": client.New(st.URL(), "alpha-key", client.WithHTTPClient(hc)),
		"beta":  client.New(st.URL(), "beta-key", client.WithHTTPClient(hc)),
	}
	l := newLoad(clients)
	inj := &injector{stack: &st, load: l, probe: clients["alpha"], start: time.Now(), say: progress,
		warm: cfg.Threads * cfg.Each / 10, over: cfg.Over}
	progress(fmt.Sprintf("load: %d threads × %d executions over %s, a one-off every %s; faults %v",
		cfg.Threads, cfg.Each, cfg.Over, cfg.OneOffEvery, cfg.Faults))

	runCtx, cancel := context.WithTimeout(ctx, cfg.Over+cfg.Drain+10*time.Minute)
	defer cancel()
	threadsDone, stopOneOffs, oneOffsDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() { l.threads(runCtx, cfg.Threads, cfg.Each, cfg.Over); close(threadsDone) }()
	go func() { l.oneOffs(runCtx, stopOneOffs, cfg.OneOffEvery); close(oneOffsDone) }()
	offsets := make([]time.Duration, len(cfg.Faults))
	for i, f := range cfg.Faults {
		offsets[i] = time.Duration(faultAt[f] * float64(cfg.Over))
	}
	inj.run(runCtx, cfg.Faults, offsets)
	<-threadsDone
	close(stopOneOffs)
	<-oneOffsDone
	res.Timings.Load = time.Since(inj.start)
	res.Events, res.Redis = inj.events, inj.redis

	accepted, refused, gaveUp := l.snapshot()
	progress(fmt.Sprintf("%d executions accepted; waiting up to %s for all to end", len(accepted), cfg.Drain))
	drained := time.Now()
	finals := awaitAll(runCtx, clients, accepted, cfg.Drain)
	res.Timings.Drain = time.Since(drained)
	res.Refused, res.GaveUp = refused, gaveUp
	if n, err := st.Sandboxes(ctx); err == nil {
		res.SandboxesLeft = n
	}
	progress("reading the threads' logs and the sandbox journals")
	res.evaluate(runCtx, clients, finals, jdir)
	res.Timings.Total = time.Since(began)
	return res, nil
}
