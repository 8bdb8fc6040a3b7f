#!/usr/bin/env bash
# Installs gVisor's runsc (Debian's package) and registers it with the local Docker
# engine as the runtime "runsc", without restarting dockerd: the entry is added to
# daemon.json (every other key kept) and dockerd reloads it on SIGHUP. Idempotent, and
# one `docker info` when already done. Needs root on the Docker host.
#
#   deploy/runsc.sh            install + register, wait until `docker info` lists it
#
# --network=none: runsc's own network stack cannot start in the root network namespace
# of a nested engine ("cannot run with network enabled in root network namespace"),
# even for containers started with --network none; sandboxes have no network anyway.
# A second runtime, $name-egress, runs sandboxes that have egress (issue 23):
# --network=host makes gVisor pass their socket calls to the host kernel, inside the
# container's own network namespace, whose only reachable endpoint is the egress proxy
# (sandbox/docker/egress.go); gVisor's own network stack cannot start here (above).
# Not --oci-seccomp: Debian's runsc (2022-12) then applies the sandbox's seccomp
# profile inside gVisor but ignores errnoRet, so clone3 fails with EPERM instead of
# ENOSYS and glibc cannot start a thread ("can't start new thread"). The host kernel
# is guarded by gVisor's own filter on its Sentry instead (docs/DESIGN.md, "Sandbox edges and gVisor").
set -euo pipefail

name=${RUNSC_RUNTIME_NAME:-runsc}
conf=${DOCKER_DAEMON_JSON:-/etc/docker/daemon.json}

# The flags runsc runs with (see above and docs/DESIGN.md), as a JSON array.
args=${RUNSC_ARGS:-'["--network=none"]'}
egress_args=${RUNSC_EGRESS_ARGS:-'["--network=host"]'}

# registered succeeds when the engine runs $name and $name-egress with exactly these flags.
registered() {
	docker info --format '{{json .Runtimes}}' |
		jq -e --arg name "$name" --argjson args "$args" --argjson eargs "$egress_args" \
			'.[$name].runtimeArgs == $args and .[$name + "-egress"].runtimeArgs == $eargs' >/dev/null 2>&1
}

if registered; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "runsc.sh: the runtime $name is not registered with Docker; run this as root to install and register it" >&2
	exit 1
fi

apt_install() {
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null ||
		{ apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null; }
}
command -v runsc >/dev/null || { echo "runsc.sh: apt-get install runsc"; apt_install runsc; }
command -v jq >/dev/null || apt_install jq
path=$(command -v runsc)

mkdir -p "$(dirname "$conf")"
[ -s "$conf" ] || echo '{}' >"$conf"
tmp=$(mktemp "$conf.XXXXXX")
jq --arg name "$name" --arg path "$path" --argjson args "$args" --argjson eargs "$egress_args" \
	'.runtimes[$name] = {"path": $path, "runtimeArgs": $args} | .runtimes[$name + "-egress"] = {"path": $path, "runtimeArgs": $eargs}' \
	"$conf" >"$tmp"
chmod --reference="$conf" "$tmp"
mv "$tmp" "$conf"

pid=$(pidof dockerd || true)
if [ -z "$pid" ]; then
	echo "runsc.sh: no dockerd process on this host to reload; $conf now registers $name" >&2
	exit 1
fi
echo "runsc.sh: registering $name and $name-egress ($path) in $conf; reloading dockerd (SIGHUP, no restart)"
kill -HUP $pid
for _ in $(seq 1 100); do
	registered && exit 0
	sleep 0.1
done
echo "runsc.sh: dockerd did not list $name within 10 s after reloading $conf; see its log" >&2
exit 1
