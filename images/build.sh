#!/usr/bin/env bash
# build.sh builds a sandbox image without any container registry: a minimal
# Debian rootfs (debootstrap), trimmed, with a non-root user and what its
# recipe adds, imported into Docker as IMAGE.
#
#   build.sh IMAGE RECIPE
#
# RECIPE is a directory under images/ whose recipe.sh says what the image
# holds: python (the standard library and the runner), python/data (numpy,
# pandas, matplotlib, scipy) or node (Node.js 24 from Debian forky).
#
# A recipe sets (sourced by this script, which then reads these):
#   SUITE, PACKAGES     the Debian suite and the packages debootstrap adds
#                       (comma-separated) to its minbase variant
#   PURGE               packages removed after debootstrap (dpkg --purge
#                       --force-depends), space-separated
#   LANGUAGES           the image's io.sandboxd.languages label
#                       (runnerproto.LabelLanguages): the canonical names of
#                       the languages it runs, comma-separated
#   RUNNER_PROTOCOL     its io.sandboxd.runner label (runnerproto.LabelRunner);
#                       empty for an image with no runner, which the service
#                       refuses
#   IMAGE_ENV, IMAGE_CMD  its environment (assignments) and command (JSON)
#   EXPECTED_SECONDS    a build's duration until one has been measured
#   INPUT_FILES         files from outside images/ that the image holds (the
#                       supervisor's binary), space-separated: inputs too
# and defines recipe_setup, run on the trimmed rootfs ($root, with scratch
# space in $work) once the sandbox user exists. A recipe may source the
# recipe of the directory above it (python/data sources python's).
#
# Every image whose LANGUAGES name bash gets Bash's session stub,
# bash-session.sh, as /opt/sandbox/stubs/bash-session.sh (bash itself is
# Debian's, in every root).
#
# The image carries a label with the hash of its inputs (this script, Bash's
# session stub, the files of the recipe's directory and of each directory
# above it, its INPUT_FILES, the suite and the mirror); when an image of that
# name already has the same hash, nothing is rebuilt. Editing python/data's
# files never rebuilds python's.
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

[ $# = 2 ] || { printf 'usage: %s IMAGE RECIPE\n' "$0" >&2; exit 2; }
IMAGE=$1
RECIPE=$2
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SANDBOX_UID=10001
here=$(cd "$(dirname "$0")" && pwd)
BUILD_STATUS_DIR=${BUILD_STATUS_DIR:-$here/../data/build}
DEBOOTSTRAP_CACHE=${DEBOOTSTRAP_CACHE:-/var/cache/sandboxd/debootstrap}

log() { printf 'image: %s\n' "$*" >&2; }

case "$RECIPE" in /* | *..* | .*) RECIPE=unknown ;; esac
recipe_dir=$here/${RECIPE%/}
[ -f "$recipe_dir/recipe.sh" ] || { log "unknown recipe $2 (want a directory of $here with a recipe.sh)"; exit 2; }
RUNNER_PROTOCOL=""
INPUT_FILES=""
# shellcheck source=python/recipe.sh
. "$recipe_dir/recipe.sh"

# The inputs: this script and Bash's session stub, then the files of each directory from images/
# down to the recipe's (sub-directories are other recipes' inputs).
inputs=$(cat "$here/build.sh" "$here/bash-session.sh"; echo "$SUITE $MIRROR $SANDBOX_UID")
dir=$here
for part in ${RECIPE//\// }; do
  dir=$dir/$part
  for f in "$dir"/*; do
    [ -f "$f" ] && inputs+=$(echo "${f#"$here"/}"; cat "$f")
  done
done
for f in $INPUT_FILES; do
  [ -f "$f" ] || { log "$f is missing (make supervisor builds the supervisor)"; exit 1; }
  inputs+=$(basename "$f"; sha256sum <"$f")
done
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
  # A suite newer than the host's debootstrap (forky on bookworm's 1.0.128)
  # has no script of its own; sid's is the same recipe. debootstrap checks
  # a Release's signature, not its Valid-Until, so a testing suite whose
  # mirror serves a stale snapshot still builds.
  local script=/usr/share/debootstrap/scripts/$SUITE
  [ -e "$script" ] || script=/usr/share/debootstrap/scripts/sid
  log "debootstrap $SUITE ($PACKAGES) into $root"
  # The cache holds .debs shared by every build; one debootstrap uses it at a time.
  (
    flock 8
    debootstrap --variant=minbase --cache-dir="$DEBOOTSTRAP_CACHE" --include="$PACKAGES" \
      "$SUITE" "$root" "$MIRROR" "$script" >"$work/debootstrap.log" 2>&1
  ) 8>>"$DEBOOTSTRAP_CACHE/.lock" || { tail -n 30 "$work/debootstrap.log" >&2; exit 1; }
  log "debootstrap took $((SECONDS - t)) s"
  t=$SECONDS

  # Trim what a sandboxed program has no use for: package tooling, docs, caches.
  # shellcheck disable=SC2086 # PURGE is a list of package names
  chroot "$root" /usr/bin/dpkg --purge --force-remove-essential --force-depends $PURGE >"$work/purge.log" 2>&1 ||
    { tail -n 30 "$work/purge.log" >&2; exit 1; }
  rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
    "$root"/usr/share/locale/* "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* \
    "$root"/var/log/* "$root"/tmp/*

  # The unprivileged user every program runs as.
  echo "sandbox:x:$SANDBOX_UID:$SANDBOX_UID:sandbox:/tmp:/usr/sbin/nologin" >> "$root/etc/passwd"
  echo "sandbox:x:$SANDBOX_UID:" >> "$root/etc/group"
  echo "sandbox:*:19000:0:99999:7:::" >> "$root/etc/shadow"

  recipe_setup
  case ",$LANGUAGES," in
    *,bash,*) install -D -m 0644 "$here/bash-session.sh" "$root/opt/sandbox/stubs/bash-session.sh" ;;
  esac
  log "trimming and setting up took $((SECONDS - t)) s"
  t=$SECONDS
  local labels=(--change "LABEL io.sandboxd.inputs=$hash" --change "LABEL io.sandboxd.languages=$LANGUAGES")
  [ -z "$RUNNER_PROTOCOL" ] || labels+=(--change "LABEL io.sandboxd.runner=$RUNNER_PROTOCOL")
  log "importing into Docker as $IMAGE"
  tar -C "$root" -c . | docker import \
    --change "USER $SANDBOX_UID:$SANDBOX_UID" \
    --change "WORKDIR /tmp" \
    --change "ENV $IMAGE_ENV" \
    --change "CMD $IMAGE_CMD" \
    "${labels[@]}" \
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
# The expected duration is the last successful build's, else the recipe's
# figure, measured on 2 cores (BENCHMARKS.md, "A newcomer's first answer").
expected=$(cat "$BUILD_STATUS_DIR/$name.seconds" 2>/dev/null || true)
case "$expected" in '' | *[!0-9]*) expected=$EXPECTED_SECONDS ;; esac
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
SANDBOXD_BUILD_WORK=$work SANDBOXD_BUILD_PARTIAL=$partial setsid "$here/build.sh" "$IMAGE" "$RECIPE" </dev/null &
worker=$!
wait "$worker"
worker=""
docker tag "$partial" "$IMAGE"
echo $(($(date +%s) - started)) > "$BUILD_STATUS_DIR/$name.seconds"
log "built $IMAGE (inputs $hash) in $(($(date +%s) - started)) s: $(docker image inspect --format '{{.Size}}' "$IMAGE" | numfmt --to=iec)"
