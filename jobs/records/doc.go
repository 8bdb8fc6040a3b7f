// Package records keeps codeinterp's execution records in Redis: the record of each
// execution and thread operation (a hash with the status beside the JSON, so status
// changes are compare-and-set scripts that never re-encode JSON), idempotency keys,
// listing indexes, event streams, the end-of-execution notifications long-polls wait
// on, cancel requests, and what is known of each thread (its state, activity, live
// sandboxes).
//
// Every Redis key it uses is built in keys.go, and no other package builds one of
// them. Queueing a thread's item is atomic with storing its record, so Create runs one
// script over keys that jobs/threadq hands it. It knows nothing of sandboxes, HTTP or
// S3.
package records
