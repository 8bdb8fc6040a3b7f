// Package sandbox is the runtime-neutral contract of codeinterp's sandboxes: what a
// sandbox is asked to do (a [Request], files in and out, pause, snapshot) and what it
// answers (an [Outcome], [Event]s), the limits it runs under, and the interfaces a
// runtime implements — [Runtime] for a worker, [Host] for a janitor, [Sandbox] for
// one sandbox. sandbox/docker implements them on a Docker engine; sandboxtest pins
// their behaviour in conformance suites and provides an in-memory fake.
//
// It owns no I/O and must not import a runtime's client (Docker, Kubernetes), Redis,
// HTTP or S3: the API links this package without linking a container runtime.
package sandbox
