#!/usr/bin/env bash
# run.sh is `make run`: it brings up Docker, builds the binary and the python
# image (the Go build alongside the image, as they wait on different things),
# prints how long each step took, starts the data image's build in the
# background and serves at once. Until the data image is ready the service
# answers its runs 503 with Retry-After (it reads the build's status file,
# images/build.sh); its warm pool starts by itself when the image
# appears. Ctrl-C (or SIGTERM) stops the service and the background build,
# which leaves nothing half-built behind (build.sh).
#
# The Makefile passes GO, LDFLAGS, IMAGE and DATA_IMAGE.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
IMAGE=${IMAGE:-sandbox-python:3.11}
DATA_IMAGE=${DATA_IMAGE:-sandbox-python-data:3.11}
LDFLAGS=${LDFLAGS:-}
export BUILD_STATUS_DIR=${BUILD_STATUS_DIR:-$PWD/data/build}
mkdir -p "$BUILD_STATUS_DIR"

log() { printf 'run: %s\n' "$*" >&2; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

begin=$(now)
times=$(mktemp -d /tmp/sandboxd-run.XXXXXX)
data_pid=""
srv=""
cleanup() {
  if [ -n "$data_pid" ] && [ -e "$BUILD_STATUS_DIR/$(printf '%s' "$DATA_IMAGE" | tr -c 'A-Za-z0-9._-' '_').json" ] &&
    kill -0 "$data_pid" 2>/dev/null; then
    log "stopping the data image's build (it leaves nothing half-built)"
    kill -TERM -- "-$data_pid" 2>/dev/null || true
    while kill -0 "$data_pid" 2>/dev/null; do sleep 0.2; done
  fi
  [ -z "$go_pid" ] || kill -TERM "$go_pid" 2>/dev/null || true
  rm -rf "$times"
}
go_pid=""
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The Go modules and the binary, in the background: compiling is CPU, the
# image's debootstrap mostly download and dpkg.
(
  t0=$(now)
  # Only the modules the binary imports (go mod download would fetch the
  # tests' too: twice the bytes).
  "$GO" list -deps ./cmd/sandboxd >/dev/null
  t1=$(now)
  "$GO" build -ldflags "$LDFLAGS" -o bin/sandboxd ./cmd/sandboxd
  t2=$(now)
  echo "$(secs "$t0" "$t1") $(secs "$t1" "$t2")" > "$times/go"
) >"$times/go.log" 2>&1 &
go_pid=$!

t0=$(now)
scripts/docker-up.sh
t1=$(now)
images/build.sh "$IMAGE" python
t2=$(now)
if ! wait "$go_pid"; then
  go_pid=""
  cat "$times/go.log" >&2
  log "the Go build failed"
  exit 1
fi
go_pid=""
t3=$(now)
read -r go_mod go_build < "$times/go"

# The data image in its own session, so that Ctrl-C reaches it through
# cleanup alone, after the service has begun to shut down.
data_log="$BUILD_STATUS_DIR/$(printf '%s' "$DATA_IMAGE" | tr -c 'A-Za-z0-9._-' '_').log"
setsid images/build.sh "$DATA_IMAGE" python/data >"$data_log" 2>&1 < /dev/null &
data_pid=$!

log "ready to serve in $(secs "$begin" "$t3") s:"
log "  docker (install/start)  $(secs "$t0" "$t1") s"
log "  python image            $(secs "$t1" "$t2") s"
log "  go modules              $go_mod s (alongside the image)"
log "  go build                $go_build s (alongside the image)"
log "  waiting for go build    $(secs "$t2" "$t3") s"
log "the data image builds in the background (log: $data_log); GET /v1/health says when it is ready"

bin/sandboxd serve &
srv=$!
trap 'kill -INT "$srv" 2>/dev/null || true' INT
trap 'kill -TERM "$srv" 2>/dev/null || true' TERM
status=0
while kill -0 "$srv" 2>/dev/null; do
  wait "$srv" && status=0 || status=$?
done
exit "$status"
