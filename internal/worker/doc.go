// Package worker is the worker engine: it runs one-off executions as asynq tasks in
// sandboxes no other tenant's code ran in, and serves the threads it owns — taking their items in order from
// jobs/threadq, keeping each thread's sandbox warm, pausing, snapshotting and reaping
// it when asked, adopting a dead worker's sandbox — and stores what code produced.
//
// Files are cut by concern: runner.go (configuration), loops.go (start, stop,
// heartbeat, wake-ups and offers), serve.go (a thread's serve loop), oneoff.go,
// execute.go (one run), stream.go (its events, within their byte budget), finish.go
// (its end, saved with retries, and usage), record.go (a record cut to its size
// limit), collect.go (outputs to storage, within their budget), spool.go,
// threadops.go (file and delete operations), lifecycle.go (pause, reap, snapshot),
// sandboxes.go (getting a thread its sandbox), capacity.go (sandbox caps), pool.go
// (the warm and one-off pools of each profile), recycle.go (wiped one-off sandboxes
// kept for their tenant), cancel.go.
//
// It talks to sandboxes only through the sandbox interfaces (a runtime is injected),
// to Redis only through jobs/records and jobs/threadq, and knows nothing of HTTP.
package worker
