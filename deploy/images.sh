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
CACHE=${CODEINTERP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/codeinterp}
BUILD=deploy/.build
ALL=(sandbox-slim sandbox redis minio api worker janitor setup)
want=("${@:-${ALL[@]}}")

log() { printf '%-8s %s\n' "$1" "$2"; }

# inputs_hash prints a short hash of the base image id and the given files' contents.
inputs_hash() {
  { echo "$base_id"; LC_ALL=C sha256sum "$@"; } | sha256sum | cut -c1-16
}

# build NAME CONTEXT HASH [DOCKER BUILD ARGS...]: builds codeinterp/NAME:HASH unless it
# exists; tags :latest.
build() {
  local img=$1 name=codeinterp/$1 ctx=$2 hash=$3 start
  shift 3
  if docker image inspect "$name:$hash" >/dev/null 2>&1; then
    docker tag "$name:$hash" "$name:latest"
    log "$img" "up to date ($name:$hash, $(size "$name:$hash"))"
    return
  fi
  start=$(date +%s)
  local out
  if ! out=$(docker build --build-arg BASE_IMAGE="$BASE_IMAGE" --label codeinterp.inputs="$hash" \
    "$@" -t "$name:$hash" -t "$name:latest" "$ctx" 2>&1); then
    printf '%s\n' "$out" | tail -n 40 >&2
    log "$img" "build failed"
    return 1
  fi
  log "$img" "built $name:$hash in $(( $(date +%s) - start ))s ($(size "$name:$hash"))"
}

size() { docker image inspect -f '{{.Size}}' "$1" | awk '{printf "%.0f MB", $1/1e6}'; }

context_files() { find "$1" -type f | LC_ALL=C sort; }

if [ "$BASE_IMAGE" = codeinterp/base:bookworm ]; then
  deploy/base/build.sh "$BASE_IMAGE"
fi
base_id=$(docker image inspect -f '{{.Id}}' "$BASE_IMAGE") || {
  echo "base image $BASE_IMAGE not found" >&2; exit 1; }

for img in "${want[@]}"; do
  case $img in
  sandbox | sandbox-slim)
    target=full
    [ "$img" = sandbox ] || target=slim
    mapfile -t files < <(context_files deploy/sandbox)
    hash=$( { echo "$target"; echo "pip:$EXTRA_PIP_PACKAGES"; echo "npm:$EXTRA_NPM_PACKAGES"; inputs_hash "${files[@]}"; } | sha256sum | cut -c1-16)
    build "$img" deploy/sandbox "$hash" --target "$target" \
      --build-arg EXTRA_PIP_PACKAGES="$EXTRA_PIP_PACKAGES" --build-arg EXTRA_NPM_PACKAGES="$EXTRA_NPM_PACKAGES"
    ;;
  redis)
    mapfile -t files < <(context_files "deploy/$img")
    build "$img" "deploy/$img" "$(inputs_hash "${files[@]}")"
    ;;
  minio)
    # The server binary takes minutes to compile, so it is cached outside the clone
    # and only built when no image for this version and Dockerfile exists.
    hash=$( { echo "$MINIO_VERSION"; inputs_hash deploy/minio/Dockerfile; } | sha256sum | cut -c1-16)
    if ! docker image inspect "codeinterp/minio:$hash" >/dev/null 2>&1; then
      bin=$CACHE/minio-$MINIO_VERSION
      if [ ! -x "$bin" ]; then
        log minio "compiling github.com/minio/minio@$MINIO_VERSION (a few minutes, once)"
        mkdir -p "$CACHE/gobin"
        CGO_ENABLED=0 GOBIN="$CACHE/gobin" go install -trimpath "github.com/minio/minio@$MINIO_VERSION"
        mv "$CACHE/gobin/minio" "$bin"
      fi
      rm -rf "$BUILD/minio" && mkdir -p "$BUILD/minio"
      cp deploy/minio/Dockerfile "$BUILD/minio/" && ln "$bin" "$BUILD/minio/minio" 2>/dev/null || cp "$bin" "$BUILD/minio/minio"
    fi
    build minio "$BUILD/minio" "$hash"
    ;;
  api | worker | janitor | setup) # setup: MinIO's bucket and the services' user (cmd/setup)
    mkdir -p "$BUILD/$img"
    CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags='-s -w' -o "$BUILD/$img/app" "./cmd/$img"
    cp deploy/server/Dockerfile "$BUILD/$img/"
    build "$img" "$BUILD/$img" "$(inputs_hash "$BUILD/$img/app" "$BUILD/$img/Dockerfile")"
    ;;
  *)
    echo "unknown image $img (want: ${ALL[*]})" >&2; exit 2
    ;;
  esac
done
