#!/usr/bin/env bash
# Builds every image codeinterp needs, without a registry. Each image is tagged with a
# hash of its inputs (base image id + build context, or the Go binary) and rebuilt only
# when that hash has no image yet, so a second run takes seconds. Every image is also
# tagged :latest, which is what compose and the tests use.
#
# The sandbox comes in two sizes, two targets of one Dockerfile: codeinterp/sandbox
# (full: + Node.js, npm, LibreOffice) and codeinterp/sandbox-slim. Slim is built
# first, so the full build reuses its layers. On a machine that reaches PyPI and npm,
# EXTRA_PIP_PACKAGES and EXTRA_NPM_PACKAGES add what Debian lacks (README, "Toolbox");
# they are part of the images' hash.
#
# The first run on a fresh machine is dominated by the sandbox images (dpkg unpacking
# and configuring ~1.3 GB of packages, and the engine committing those layers), so
# what does not depend on them runs beside them: the Go binaries and MinIO's compile
# start at once, the small images are built while the sandbox images build. Each
# build's output is kept in deploy/.build/logs/NAME.log, every line stamped with the
# seconds since its build began; the last line printed is the total and the share of it
# spent downloading (Debian packages, Go modules).
#
#   BASE_IMAGE=debian:bookworm-slim deploy/images.sh   # with a registry: skip debootstrap
#   deploy/images.sh sandbox redis                      # only some images
#   EXTRA_PIP_PACKAGES="python-pptx fpdf2" deploy/images.sh sandbox-slim sandbox
set -euo pipefail
export DOCKER_BUILDKIT=0 # no buildx here; also silences the legacy-builder notice
cd "$(dirname "$0")/.."

BASE_IMAGE=${BASE_IMAGE:-codeinterp/base:bookworm}
EXTRA_PIP_PACKAGES=${EXTRA_PIP_PACKAGES:-}
EXTRA_NPM_PACKAGES=${EXTRA_NPM_PACKAGES:-}
MINIO_VERSION=${MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}
export CODEINTERP_CACHE=${CODEINTERP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/codeinterp}
CACHE=$CODEINTERP_CACHE
BUILD=deploy/.build
LOGS=$BUILD/logs
ALL=(sandbox-slim sandbox redis minio api worker janitor setup egress)
SERVERS=(api worker janitor setup egress)
want=("${@:-${ALL[@]}}")
started=$EPOCHSECONDS

for img in "${want[@]}"; do
  [[ " ${ALL[*]} " == *" $img "* ]] || { echo "unknown image $img (want: ${ALL[*]})" >&2; exit 2; }
done
wants() { [[ " ${want[*]} " == *" $1 "* ]]; }

rm -rf "$LOGS" && mkdir -p "$LOGS"
export CODEINTERP_DOWNLOADS_LEDGER=$PWD/$LOGS/downloads # deploy/base/build.sh adds to it

log() { printf '%-8s %s\n' "$1" "$2"; }

# stamp prefixes each line of its input with the seconds since it started.
stamp() {
  local t0=$EPOCHSECONDS line
  while IFS= read -r line; do printf '[%4d s] %s\n' $((EPOCHSECONDS - t0)) "$line"; done
}

# timed NAME CMD...: runs CMD and appends "NAME SECONDS" to the downloads ledger.
timed() {
  local name=$1 t0=$EPOCHSECONDS
  shift
  "$@"
  echo "$name $((EPOCHSECONDS - t0))" >>"$LOGS/downloads"
}

# inputs_hash prints a short hash of the base image id and the given files' contents.
inputs_hash() {
  { echo "$base_id"; LC_ALL=C sha256sum "$@"; } | sha256sum | cut -c1-16
}

# build NAME CONTEXT HASH [DOCKER BUILD ARGS...]: builds codeinterp/NAME:HASH unless it
# exists; tags :latest.
build() {
  local img=$1 name=codeinterp/$1 ctx=$2 hash=$3 start=$EPOCHSECONDS
  shift 3
  if docker image inspect "$name:$hash" >/dev/null 2>&1; then
    docker tag "$name:$hash" "$name:latest"
    log "$img" "up to date ($name:$hash, $(size "$name:$hash"))"
    return
  fi
  if ! docker build --build-arg BASE_IMAGE="$BASE_IMAGE" --label codeinterp.inputs="$hash" \
    "$@" -t "$name:$hash" -t "$name:latest" "$ctx" 2>&1 | stamp >"$LOGS/$img.log"; then
    tail -n 40 "$LOGS/$img.log" >&2
    log "$img" "build failed (the whole output: $LOGS/$img.log)"
    return 1
  fi
  log "$img" "built $name:$hash in $((EPOCHSECONDS - start))s ($(size "$name:$hash"))"
}

size() { docker image inspect -f '{{.Size}}' "$1" | awk '{printf "%.0f MB", $1/1e6}'; }

context_files() { find "$1" -type f | LC_ALL=C sort; }

sandbox_image() { # sandbox or sandbox-slim
  local img=$1 target=full files hash
  [ "$img" = sandbox ] || target=slim
  mapfile -t files < <(context_files deploy/sandbox)
  hash=$( { echo "$target"; echo "pip:$EXTRA_PIP_PACKAGES"; echo "npm:$EXTRA_NPM_PACKAGES"; inputs_hash "${files[@]}"; } | sha256sum | cut -c1-16)
  build "$img" deploy/sandbox "$hash" --target "$target" \
    --build-arg EXTRA_PIP_PACKAGES="$EXTRA_PIP_PACKAGES" --build-arg EXTRA_NPM_PACKAGES="$EXTRA_NPM_PACKAGES"
}

# minio_hash BASE_ID: the tag of MinIO's image (its version, its Dockerfile, the base).
minio_hash() {
  { echo "$MINIO_VERSION"; { echo "$1"; LC_ALL=C sha256sum deploy/minio/Dockerfile; } | sha256sum | cut -c1-16; } |
    sha256sum | cut -c1-16
}

# minio_binary compiles the MinIO server (minutes) into the cache outside the clone,
# once per version, unless an image of this version and Dockerfile exists already.
minio_binary() {
  local bin=$CACHE/minio-$MINIO_VERSION
  [ -x "$bin" ] && return
  log minio "compiling github.com/minio/minio@$MINIO_VERSION (a few minutes, once)"
  mkdir -p "$CACHE/gobin"
  # -n resolves and downloads every module without compiling: the download, timed apart.
  timed "go-modules(minio)" env GOBIN="$CACHE/gobin" go install -n "github.com/minio/minio@$MINIO_VERSION" 2>/dev/null
  CGO_ENABLED=0 GOBIN="$CACHE/gobin" go install -trimpath "github.com/minio/minio@$MINIO_VERSION"
  mv "$CACHE/gobin/minio" "$bin"
}

minio_image() {
  local hash bin=$CACHE/minio-$MINIO_VERSION
  hash=$(minio_hash "$base_id")
  if ! docker image inspect "codeinterp/minio:$hash" >/dev/null 2>&1; then
    rm -rf "$BUILD/minio" && mkdir -p "$BUILD/minio"
    cp deploy/minio/Dockerfile "$BUILD/minio/" && ln "$bin" "$BUILD/minio/minio" 2>/dev/null || cp "$bin" "$BUILD/minio/minio"
  fi
  build minio "$BUILD/minio" "$hash"
}

# server_binaries builds the wanted ones of api, worker, janitor, setup and egress (cmd/setup:
# MinIO's bucket and the services' user) as static binaries.
server_binaries() {
  local img pkgs=()
  for img in "${SERVERS[@]}"; do wants "$img" && pkgs+=("./cmd/$img"); done
  [ ${#pkgs[@]} -gt 0 ] || return 0
  timed "go-modules(servers)" go mod download
  for img in "${SERVERS[@]}"; do
    wants "$img" || continue
    mkdir -p "$BUILD/$img"
    CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags='-s -w' -o "$BUILD/$img/app" "./cmd/$img"
    cp deploy/server/Dockerfile "$BUILD/$img/"
  done
}

# Background jobs: each is waited for by name, and a failure fails the run.
declare -A jobs=()
start_job() { local name=$1; shift; "$@" & jobs[$name]=$!; }
wait_job() {
  local name=$1
  [ -n "${jobs[$name]:-}" ] || return 0
  wait "${jobs[$name]}" || { log "$name" "failed"; exit 1; }
  unset "jobs[$name]"
}

# 1. What needs no base image starts at once. (No base yet means no MinIO image either.)
start_job server-binaries server_binaries
base_id=$(docker image inspect -f '{{.Id}}' "$BASE_IMAGE" 2>/dev/null || true)
if wants minio && { [ -z "$base_id" ] || ! docker image inspect "codeinterp/minio:$(minio_hash "$base_id")" >/dev/null 2>&1; }; then
  start_job minio-binary minio_binary
fi

# 2. The base image everything else starts FROM.
if [ "$BASE_IMAGE" = codeinterp/base:bookworm ]; then
  deploy/base/build.sh "$BASE_IMAGE"
fi
base_id=$(docker image inspect -f '{{.Id}}' "$BASE_IMAGE") || {
  echo "base image $BASE_IMAGE not found" >&2; exit 1; }

# 3. The sandbox images, the long part, one after the other (full reuses slim's layers)…
sandboxes() {
  local img
  for img in sandbox-slim sandbox; do
    if wants "$img"; then sandbox_image "$img"; fi
  done
}
start_job sandboxes sandboxes

# 4. …while the small images build beside them.
if wants redis; then
  mapfile -t files < <(context_files deploy/redis)
  build redis deploy/redis "$(inputs_hash "${files[@]}")"
fi
wait_job server-binaries
for img in "${SERVERS[@]}"; do
  if wants "$img"; then build "$img" "$BUILD/$img" "$(inputs_hash "$BUILD/$img/app" "$BUILD/$img/Dockerfile")"; fi
done
wait_job minio-binary
if wants minio; then minio_image; fi
wait_job sandboxes

# 5. Where the time went: the wall time, and how much of it was spent downloading
# (apt's "Fetched … in 1min 2s" lines, debootstrap's and Go's downloads, timed apart;
# they overlap other work).
apt_seconds() {
  cat "$LOGS"/*.log 2>/dev/null | sed -n 's/.*Fetched .* in \(.*\) (.*/\1/p' |
    awk '{for (i = 1; i <= NF; i++) { n = $i + 0; if ($i ~ /h$/) t += n * 3600; else if ($i ~ /min$/) t += n * 60; else t += n } } END { print t + 0 }'
}
total=$((EPOCHSECONDS - started))
if [ "$total" -ge 60 ]; then
  apt=$(apt_seconds)
  read -r deb go < <(awk '$1 == "debootstrap" {d += $2} $1 ~ /^go-modules/ {g += $2} END {print d + 0, g + 0}' "$LOGS/downloads" 2>/dev/null || echo 0 0)
  down=$((apt + deb + go))
  log total "${total}s; downloading ${down}s ($((100 * down / total))%): Debian packages $((apt + deb))s, Go modules ${go}s (logs: $LOGS)"
fi
