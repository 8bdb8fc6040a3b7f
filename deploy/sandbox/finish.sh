#!/bin/sh
# The last build step of each sandbox image target (Dockerfile): run as root once the
# packages and helpers are in place. $1 is the target, slim or full.
set -eux
chmod 0755 /opt/codeinterp/reset
# Build matplotlib's font cache once; the driver copies it to the writable
# MPLCONFIGDIR at start, so no sandbox pays the multi-second font scan.
MPLCONFIGDIR=/opt/codeinterp/mplcache MPLBACKEND=Agg python3 -c 'import matplotlib.font_manager'
if [ "$1" = full ]; then
  # LibreOffice's launcher resolves the /usr/bin/soffice link with `ls -l`, which fails
  # under gVisor (Debian's runsc: statx with AT_NO_AUTOMOUNT is EINVAL). Wrappers
  # earlier on PATH call the launcher where it lies, so there is no link to resolve.
  for cmd in soffice libreoffice; do
    printf '#!/bin/sh\nexec /usr/lib/libreoffice/program/soffice "$@"\n' >/usr/local/bin/$cmd
    chmod 0755 /usr/local/bin/$cmd
  done
fi
# What this image offers, for GET /v1/runtimes (manifest.py says how it is made).
python3 /opt/codeinterp/manifest.py "$1" >/opt/codeinterp/runtimes.json
python3 -m compileall -q /opt/codeinterp
mkdir -p /workspace && chown 1000:1000 /workspace
# What the version probes left under HOME (the runtime mounts a fresh /tmp anyway).
rm -rf /tmp/* /tmp/.[!.]*
