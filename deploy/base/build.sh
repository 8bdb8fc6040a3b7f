#!/usr/bin/env bash
# Builds the Debian base image that every other image starts FROM, without a registry:
# debootstrap a minimal bookworm into a temp dir and `docker import` it. Skipped when
# the image already exists. A user with a registry can skip this and pass
# BASE_IMAGE=debian:bookworm-slim to `make images` instead.
#
# The packages are downloaded first, into a cache outside the clone that later runs
# reuse (like MinIO's compiled server); the download is timed apart for images.sh's
# summary (CODEINTERP_DOWNLOADS_LEDGER).
set -euo pipefail

image=${1:-codeinterp/base:bookworm}
suite=${SUITE:-bookworm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${CODEINTERP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/codeinterp}/debootstrap-$suite
ledger=${CODEINTERP_DOWNLOADS_LEDGER:-/dev/null}

if docker image inspect "$image" >/dev/null 2>&1; then
  echo "base: $image exists"
  exit 0
fi

if ! command -v debootstrap >/dev/null 2>&1; then
  echo "base: installing debootstrap"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$cache"
t0=$EPOCHSECONDS
debootstrap --variant=minbase --download-only --cache-dir="$cache" "$suite" "$tmp/download" "$mirror" >/dev/null
echo "debootstrap $((EPOCHSECONDS - t0))" >>"$ledger"
root=$tmp/fs
echo "base: debootstrap $suite into $root"
debootstrap --variant=minbase --cache-dir="$cache" "$suite" "$root" "$mirror" >/dev/null
# Keep images small: no docs, man pages or locales from later apt-get installs.
cat >"$root/etc/dpkg/dpkg.cfg.d/01-nodoc" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
CFG
cat >"$root/etc/apt/apt.conf.d/01-slim" <<'CFG'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
CFG
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | docker import --change 'CMD ["/bin/bash"]' - "$image" >/dev/null
echo "base: imported $image"
