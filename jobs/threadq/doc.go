// Package threadq is the per-thread order and ownership of codeinterp's threads, and
// the registry of workers, kept in Redis. Each thread has a list of queued item ids
// and, while a worker serves it, an owner. Only the owner takes items, one at a time,
// marking each in flight, so a thread's items run in the order they were accepted and
// never overlap, across any number of workers. A worker owns a thread for as long as
// its heartbeat lasts; when it stops, a sweep frees its threads for others. Every move
// between states is one Lua script (lua/), each pinned by table tests against a real
// Redis. See docs/DESIGN.md.
//
// It owns its Redis keys (keys.go) and nothing else: it does not read or write
// execution records (jobs/records), and knows nothing of sandboxes, HTTP or S3.
package threadq
