#!/usr/bin/env bash
# build.sh builds the sandbox's Python image without any container registry:
# a minimal Debian rootfs (debootstrap, python3 and its standard library, a
# non-root user, the runner), imported into Docker as IMAGE.
#
#   build.sh [IMAGE [VARIANT]]
#
# VARIANT "default" (the default) is the standard library alone. "data" adds
# Debian's numpy, pandas, matplotlib and scipy and a font (see data/variant.sh).
#
# The image carries a label with the hash of its inputs; when an image of that
# name already has the same hash, nothing is rebuilt.
set -euo pipefail

IMAGE=${1:-sandbox-python:3.11}
VARIANT=${2:-default}
SUITE=${SUITE:-bookworm}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
PACKAGES=python3-minimal,libpython3.11-stdlib
SANDBOX_UID=10001
# The version of the protocol run.py speaks with the service (runtime/protocol.go:
# runnerProtocol); the service refuses an image with another.
RUNNER_PROTOCOL=5
here=$(cd "$(dirname "$0")" && pwd)

log() { printf 'image: %s\n' "$*" >&2; }

# A variant other than the default is the directory of that name here: its
# variant.sh sets VARIANT_PACKAGES (added to PACKAGES) and VARIANT_ENV (added
# to the image's environment), and defines variant_setup, run on the rootfs
# (in $root, scratch space in $work) instead of emptying dist-packages. Its
# files are inputs of its image only, so editing them never rebuilds the
# default image.
if [ "$VARIANT" != default ]; then
  case "$VARIANT" in */* | .*) VARIANT=unknown ;; esac
  [ -f "$here/$VARIANT/variant.sh" ] || { log "unknown variant ${2} (want default or a directory of $here)"; exit 2; }
  # shellcheck source=data/variant.sh
  . "$here/$VARIANT/variant.sh"
  PACKAGES=$PACKAGES,$VARIANT_PACKAGES
fi

inputs=$(cat "$here/build.sh" "$here/run.py"; echo "$SUITE $MIRROR $PACKAGES $SANDBOX_UID $RUNNER_PROTOCOL")
[ "$VARIANT" = default ] || inputs+=$(cat "$here/$VARIANT"/*; echo "$VARIANT")

hash=$(printf '%s' "$inputs" | sha256sum | cut -c1-16)

have=$(docker image inspect --format '{{ index .Config.Labels "io.sandboxd.inputs" }}' "$IMAGE" 2>/dev/null || true)
if [ "$have" = "$hash" ]; then
  log "$IMAGE is up to date (inputs $hash)"
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  log "building $IMAGE needs root (debootstrap); run 'sudo make image'"
  exit 1
fi
if ! command -v debootstrap >/dev/null 2>&1; then
  log "installing debootstrap"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

work=$(mktemp -d /tmp/sandbox-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"
log "debootstrap $SUITE ($PACKAGES) into $root"
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1 || {
  tail -n 30 "$work/debootstrap.log" >&2; exit 1; }

# Trim what a sandboxed program has no use for: package tooling, docs, caches.
chroot "$root" /usr/bin/dpkg --purge --force-remove-essential --force-depends \
  apt >/dev/null 2>&1 || true
rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
  "$root"/usr/share/locale/* "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* \
  "$root"/var/log/* "$root"/tmp/*
if [ "$VARIANT" = default ]; then
  rm -rf "$root"/usr/lib/python3/dist-packages/*
else
  variant_setup
fi

# The unprivileged user every program runs as.
echo "sandbox:x:$SANDBOX_UID:$SANDBOX_UID:sandbox:/tmp:/usr/sbin/nologin" >> "$root/etc/passwd"
echo "sandbox:x:$SANDBOX_UID:" >> "$root/etc/group"
echo "sandbox:*:19000:0:99999:7:::" >> "$root/etc/shadow"

install -D -m 0644 "$here/run.py" "$root/opt/sandbox/run.py"
# Byte-compile the standard library once, so no run pays for it (the runner
# itself is a script, compiled at each start, before its program arrives).
chroot "$root" /usr/bin/python3 -m compileall -q /usr/lib/python3.11 >/dev/null 2>&1 || true

variant_env=()
[ "$VARIANT" = default ] || variant_env=(--change "ENV $VARIANT_ENV")
log "importing into Docker as $IMAGE"
tar -C "$root" -c . | docker import \
  --change "USER $SANDBOX_UID:$SANDBOX_UID" \
  --change "WORKDIR /tmp" \
  --change "ENV HOME=/tmp LANG=C.UTF-8 PYTHONIOENCODING=utf-8 PYTHONDONTWRITEBYTECODE=1" \
  "${variant_env[@]}" \
  --change 'CMD ["/usr/bin/python3", "-I", "/opt/sandbox/run.py"]' \
  --change "LABEL io.sandboxd.inputs=$hash" \
  --change "LABEL io.sandboxd.runner=$RUNNER_PROTOCOL" \
  - "$IMAGE" >/dev/null
log "built $IMAGE (inputs $hash): $(docker image inspect --format '{{.Size}}' "$IMAGE" | numfmt --to=iec)"
