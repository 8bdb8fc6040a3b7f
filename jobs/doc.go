// Package jobs is the contract shared by the API, the workers and the janitor: the
// execution record and its kinds and statuses, the view clients see, the event types
// of an execution's stream, the asynq task names and payloads, ids, the storage key
// scheme, and the typed names both sides match on (sandbox states, error names, id
// prefixes).
//
// It holds types and pure functions only. The Redis store of records is
// jobs/records, the per-thread queue jobs/threadq, webhook delivery jobs/webhook; the
// worker engine is internal/worker. It must not import a sandbox runtime, HTTP
// frameworks or storage clients.
package jobs
