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
#
# One build of an image runs at a time: a second waits for the first (a lock
# in BUILD_STATUS_DIR) and then finds the image up to date. While it builds,
# BUILD_STATUS_DIR/<image>.json says so (its pid, start and expected
# duration): the service reads it to answer "building" instead of "missing"
# (runtime/buildstatus.go). The image is imported under a temporary tag and
# tagged IMAGE only once complete, so an interrupted build leaves neither an
# image nor its scratch space behind. Debian's packages are kept in
# DEBOOTSTRAP_CACHE between builds, so the data image downloads only what the
# python image does not have.
set -euo pipefail

IMAGE=${1:-sandbox-python:3.11}
VARIANT=${2:-default}
SUITE=${SUITE:-bookworm}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
PACKAGES=python3-minimal,libpython3.11-stdlib
SANDBOX_UID=10001
# The version of the protocol run.py speaks with the service (runtime/protocol.go:
# runnerProtocol); the service refuses an image with another.
RUNNER_PROTOCOL=6
here=$(cd "$(dirname "$0")" && pwd)
BUILD_STATUS_DIR=${BUILD_STATUS_DIR:-$here/../../data/build}
DEBOOTSTRAP_CACHE=${DEBOOTSTRAP_CACHE:-/var/cache/sandboxd/debootstrap}

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

up_to_date() {
  local have
  have=$(docker image inspect --format '{{ index .Config.Labels "io.sandboxd.inputs" }}' "$IMAGE" 2>/dev/null || true)
  [ "$have" = "$hash" ]
}
if up_to_date; then
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

# build_image is the worker's part (build.sh run again with
# SANDBOXD_BUILD_WORK set, in a session of its own): the rootfs in $root,
# imported into Docker as SANDBOXD_BUILD_PARTIAL.
build_image() {
  local t=$SECONDS
  mkdir -p "$DEBOOTSTRAP_CACHE"
  log "debootstrap $SUITE ($PACKAGES) into $root"
  # The cache holds .debs shared by every build; one debootstrap uses it at a time.
  (
    flock 8
    debootstrap --variant=minbase --cache-dir="$DEBOOTSTRAP_CACHE" --include="$PACKAGES" \
      "$SUITE" "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1
  ) 8>>"$DEBOOTSTRAP_CACHE/.lock" || { tail -n 30 "$work/debootstrap.log" >&2; exit 1; }
  log "debootstrap took $((SECONDS - t)) s"
  t=$SECONDS

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
  # Byte-compile the standard library once, so no run pays for it, and the
  # runner too: the image starts run.pyc, which a container would otherwise
  # compile from run.py at every start (14-20 ms of CPU on a slow host, some
  # 3 % of a container's whole cycle; BENCHMARKS.md, 2026-12-04).
  chroot "$root" /usr/bin/python3 -m compileall -q /usr/lib/python3.11 >/dev/null 2>&1 || true
  chroot "$root" /usr/bin/python3 -c 'import py_compile; py_compile.compile("/opt/sandbox/run.py", cfile="/opt/sandbox/run.pyc", doraise=True)'

  log "trimming and byte-compiling took $((SECONDS - t)) s"
  t=$SECONDS
  variant_env=()
  [ "$VARIANT" = default ] || variant_env=(--change "ENV $VARIANT_ENV")
  log "importing into Docker as $IMAGE"
  tar -C "$root" -c . | docker import \
    --change "USER $SANDBOX_UID:$SANDBOX_UID" \
    --change "WORKDIR /tmp" \
    --change "ENV HOME=/tmp LANG=C.UTF-8 PYTHONIOENCODING=utf-8 PYTHONDONTWRITEBYTECODE=1" \
    "${variant_env[@]}" \
    --change 'CMD ["/usr/bin/python3", "-I", "/opt/sandbox/run.pyc"]' \
    --change "LABEL io.sandboxd.inputs=$hash" \
    --change "LABEL io.sandboxd.runner=$RUNNER_PROTOCOL" \
    - "$SANDBOXD_BUILD_PARTIAL" >/dev/null
  log "importing took $((SECONDS - t)) s"
}

# The worker: the supervisor below made $work and named the partial tag.
if [ -n "${SANDBOXD_BUILD_WORK:-}" ]; then
  work=$SANDBOXD_BUILD_WORK
  root="$work/rootfs"
  build_image
  exit 0
fi

# The status and lock files are named for the image (the service derives the
# same name: runtime.statusName).
name=$(printf '%s' "$IMAGE" | tr -c 'A-Za-z0-9._-' '_')
mkdir -p "$BUILD_STATUS_DIR"
status="$BUILD_STATUS_DIR/$name.json"
exec 9>>"$BUILD_STATUS_DIR/$name.lock"
if ! flock -n 9; then
  log "another build of $IMAGE is running; waiting for it"
  flock 9
  if up_to_date; then
    log "$IMAGE was built by the other build (inputs $hash)"
    exit 0
  fi
fi

started=$(date +%s)
# The expected duration is the last successful build's, else a figure
# measured on 2 cores (BENCHMARKS.md, "A newcomer's first answer").
expected=$(cat "$BUILD_STATUS_DIR/$name.seconds" 2>/dev/null || true)
case "$expected" in '' | *[!0-9]*) expected=$([ "$VARIANT" = default ] && echo 90 || echo 420) ;; esac
partial="$IMAGE-partial-$$"
work=$(mktemp -d /tmp/sandbox-image.XXXXXX)
root="$work/rootfs"
worker=""
# cleanup runs on every exit. The worker runs in a session of its own, so
# Ctrl-C reaches this supervisor alone, which stops every process of the
# worker's session (debootstrap, dpkg, tar in the chroot) and waits until they
# are gone before it removes what they were writing. An interrupted
# debootstrap may leave /proc and /sys mounted in the rootfs: they are
# unmounted first, and rm never crosses into a mount. The partial import is
# untagged (which removes it).
cleanup() {
  set +e # every step runs, whatever the one before did
  if [ -n "$worker" ]; then
    kill -TERM -- "-$worker" 2>/dev/null || true
    wait "$worker" 2>/dev/null || true
    while kill -0 -- "-$worker" 2>/dev/null; do sleep 0.1; done
  fi
  rm -f "$status"
  docker image rm "$partial" >/dev/null 2>&1 || true
  grep -o " $root/[^ ]*" /proc/mounts 2>/dev/null | sort -r | while read -r m; do umount -l "$m" || true; done
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
printf '{"pid":%d,"image":"%s","started":%d,"expected_seconds":%d}\n' "$$" "$IMAGE" "$started" "$expected" > "$status"

# setsid execs in place (a background job of a script leads no process
# group), so $! is the worker's session and process group.
SANDBOXD_BUILD_WORK=$work SANDBOXD_BUILD_PARTIAL=$partial setsid "$here/build.sh" "$IMAGE" "$VARIANT" </dev/null &
worker=$!
wait "$worker"
worker=""
docker tag "$partial" "$IMAGE"
echo $(($(date +%s) - started)) > "$BUILD_STATUS_DIR/$name.seconds"
log "built $IMAGE (inputs $hash) in $(($(date +%s) - started)) s: $(docker image inspect --format '{{.Size}}' "$IMAGE" | numfmt --to=iec)"
