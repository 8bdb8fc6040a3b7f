// Package jobs is the contract between the API and the workers, and the workers'
// handlers: the execution record kept in Redis, the asynq tasks that carry work, and
// the handler that runs an execution in a sandbox and stores what it produced.
//
// It declares the small interfaces it needs of the sandbox runtime and of artifact
// storage; it knows nothing of HTTP.
package jobs
