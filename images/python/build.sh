#!/usr/bin/env bash
# build.sh builds the sandbox's Python image without any container registry:
# a minimal Debian rootfs (debootstrap, python3 and its standard library, a
# non-root user, the runner), imported into Docker as IMAGE.
#
#   build.sh [IMAGE [VARIANT]]
#
# VARIANT "default" (the default) is the standard library alone. "data" adds
# Debian's numpy, pandas, matplotlib and scipy and a font (see data_setup).
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
RUNNER_PROTOCOL=3
here=$(cd "$(dirname "$0")" && pwd)

log() { printf 'image: %s\n' "$*" >&2; }

# What the data variant adds: Debian's builds (no registry, no pip), one font
# for matplotlib, and the environment its libraries read at run time.
DATA_PACKAGES=python3-numpy,python3-pandas,python3-matplotlib,python3-scipy,fonts-dejavu-core
# Build tools the Debian packages drag in through Depends (scipy needs
# pythran, which needs a C++ compiler and headers), and Tk (matplotlib's
# ImageTk); nothing imports them at run time, so they are purged.
DATA_PURGE="gcc-12 g++-12 cpp-12 gcc g++ cpp binutils binutils-x86-64-linux-gnu binutils-common
  libbinutils libctf0 libctf-nobfd0 libgprofng0 libasan8 liblsan0 libtsan2 libubsan1 libitm1 libcc1-0
  libisl23 libmpc3 libmpfr6 libgcc-12-dev libstdc++-12-dev libc6-dev libc-dev-bin linux-libc-dev
  libcrypt-dev libnsl-dev libtirpc-dev libexpat1-dev zlib1g-dev libboost-dev libboost1.74-dev libxsimd-dev
  libopenblas-dev libopenblas-pthread-dev python3-dev python3-all-dev python3.11-dev libpython3-dev
  libpython3-all-dev libpython3.11-dev perl perl-modules-5.36 libperl5.36
  python3-pythran python3-tk python3-pil.imagetk tk8.6-blt2.5 blt libtk8.6 libtcl8.6 libjs-jquery
  libjs-jquery-ui libjs-sphinxdoc libjs-underscore"
# One thread for BLAS and OpenMP: a run is capped at runtime.cpus (one CPU
# or less) by the CFS quota, so more threads only contend for that quota (and
# count against runtime.pids); OpenBLAS would otherwise start one per host core.
# Agg draws without a display; MPLCONFIGDIR is where build.sh leaves the
# font cache, read-only at run time.
MPL_DIR=/opt/sandbox/matplotlib
DATA_ENV="MPLBACKEND=Agg MPLCONFIGDIR=$MPL_DIR OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1"
case "$VARIANT" in
  default) ;;
  data) PACKAGES=$PACKAGES,$DATA_PACKAGES ;;
  *) log "unknown variant $VARIANT (want default or data)"; exit 2 ;;
esac

inputs=$(cat "$here/build.sh" "$here/run.py"; echo "$SUITE $MIRROR $PACKAGES $SANDBOX_UID $RUNNER_PROTOCOL")
[ "$VARIANT" = default ] || inputs+=" $VARIANT"

# data_setup makes the data variant's rootfs ready to run read-only: the
# build tools purged, tests and caches trimmed, matplotlib's font cache built
# where it reads it, and everything byte-compiled once.
data_setup() {
  # shellcheck disable=SC2086 # DATA_PURGE is a list of package names
  chroot "$root" /usr/bin/dpkg --purge --force-depends $DATA_PURGE >"$work/purge.log" 2>&1 || {
    tail -n 30 "$work/purge.log" >&2; exit 1; }
  rm -rf "$root"/usr/include/* "$root"/usr/share/matplotlib/mpl-data/sample_data
  find "$root/usr/lib/python3/dist-packages" -depth -type d \( -name tests -o -name __pycache__ \) \
    -exec rm -rf {} +
  # matplotlib 3.6 takes its config and cache directory only if it can write
  # there, else it warns and rebuilds its font cache in a temporary directory
  # at every import (half a second, written into the program's /tmp). The
  # root is read-only, so MPL_DIR is accepted as long as it is a directory.
  local init=$root/usr/lib/python3/dist-packages/matplotlib/__init__.py
  local check='        if os.access(str(configdir), os.W_OK) and configdir.is_dir():'
  [ "$(grep -cxF "$check" "$init")" = 1 ] || { log "matplotlib's cache-dir check has changed: see data_setup"; exit 1; }
  sed -i "s/^        if os.access(str(configdir), os.W_OK) and configdir.is_dir():\$/        if configdir.is_dir():/" "$init"
  mkdir -p "$root$MPL_DIR"
  # shellcheck disable=SC2086 # DATA_ENV is a list of assignments
  chroot "$root" /usr/bin/env $DATA_ENV /usr/bin/python3 -I -W error -c 'import matplotlib.pyplot' || {
    log "matplotlib did not build its font cache"; exit 1; }
  ls "$root$MPL_DIR"/fontlist-v*.json >/dev/null
  chroot "$root" /usr/bin/python3 -m compileall -q /usr/lib/python3/dist-packages >/dev/null 2>&1 || true
}
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
if [ "$VARIANT" = data ]; then
  data_setup
else
  rm -rf "$root"/usr/lib/python3/dist-packages/*
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
[ "$VARIANT" = default ] || variant_env=(--change "ENV $DATA_ENV")
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
