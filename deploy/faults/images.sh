#!/usr/bin/env bash
# Builds this checkout's server images (api, worker, janitor) for the fault suite under a
# tag of their own (FAULTS_TAG, default "faults"), never :latest: the suite runs the code
# under test, and the demo stack keeps its images. The sandbox, Redis and MinIO images
# are the ones `make images` built (:latest).
set -euo pipefail
export DOCKER_BUILDKIT=0
cd "$(dirname "$0")/../.."
TAG=${FAULTS_TAG:-faults}
BASE_IMAGE=${BASE_IMAGE:-codeinterp/base:bookworm}
for img in api worker janitor; do
  dir=deploy/.build/faults/$img
  mkdir -p "$dir"
  CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags='-s -w' -o "$dir/app" "./cmd/$img"
  cp deploy/server/Dockerfile "$dir/"
  if ! out=$(docker build --build-arg BASE_IMAGE="$BASE_IMAGE" -t "codeinterp/$img:$TAG" "$dir" 2>&1); then
    printf '%s\n' "$out" | tail -n 40 >&2
    echo "$img: build failed" >&2
    exit 1
  fi
  printf '%-8s codeinterp/%s:%s\n' "$img" "$img" "$TAG"
done
