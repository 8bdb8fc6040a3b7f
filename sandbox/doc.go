// Package sandbox runs untrusted code in hardened Docker containers.
//
// A [Sandbox] is one container with a size-limited /workspace (a tmpfs volume) and a
// long-lived Python kernel (deploy/sandbox/driver.py) attached over a `docker exec`
// stream. Code runs in that kernel, so Python state survives between runs; a one-off
// execution is a sandbox that is removed after a single run.
//
// The container's main process is a keeper (`sleep infinity` under docker-init) that
// runs as a different uid from the code, so the code can kill everything it started
// without taking the container, and with it the workspace, down.
//
// The package owns containers, volumes, the kernel protocol and resource limits. It
// knows nothing of Redis, HTTP, S3 or tenants beyond the labels it is given.
package sandbox
