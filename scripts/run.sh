#!/usr/bin/env bash
# run.sh is `make run`: it brings up Docker, builds the binary and the python
# image (the Go build alongside the image, as they wait on different things),
# prints how long each step took, starts the data and node images' builds in
# the background and serves at once. Until an image is ready the service
# answers its environment's runs 503 with Retry-After (it reads the build's status file,
# images/build.sh); its warm pool starts by itself when the image
# appears. Ctrl-C (or SIGTERM) stops the service and the background builds,
# which leaves nothing half-built behind (build.sh).
#
# The Makefile passes GO, LDFLAGS, IMAGE, DATA_IMAGE and NODE_IMAGE.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
IMAGE=${IMAGE:-sandbox-python:3.11}
DATA_IMAGE=${DATA_IMAGE:-sandbox-python-data:3.11}
NODE_IMAGE=${NODE_IMAGE:-sandbox-node:24}
LDFLAGS=${LDFLAGS:-}
export BUILD_STATUS_DIR=${BUILD_STATUS_DIR:-$PWD/data/build}
mkdir -p "$BUILD_STATUS_DIR"

log() { printf 'run: %s\n' "$*" >&2; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

begin=$(now)
times=$(mktemp -d /tmp/sandboxd-run.XXXXXX)
data_pid=""
node_pid=""
srv=""
status_file() { printf '%s/%s.json' "$BUILD_STATUS_DIR" "$(printf '%s' "$1" | tr -c 'A-Za-z0-9._-' '_')"; }
# stop_build ends a background build (its own session) that is still running.
stop_build() { # pid image what
  if [ -n "$1" ] && [ -e "$(status_file "$2")" ] && kill -0 "$1" 2>/dev/null; then
    log "stopping the $3 image's build (it leaves nothing half-built)"
    kill -TERM -- "-$1" 2>/dev/null || true
    while kill -0 "$1" 2>/dev/null; do sleep 0.2; done
  fi
}
cleanup() {
  stop_build "$data_pid" "$DATA_IMAGE" data
  stop_build "$node_pid" "$NODE_IMAGE" node
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
  # The node image's PID 1 (images/node/recipe.sh), as make supervisor builds it.
  CGO_ENABLED=0 "$GO" build -trimpath -buildvcs=false -ldflags "-s -w" -o bin/sandbox-supervisor ./cmd/sandbox-supervisor
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

# The data and node images each in its own session, so that Ctrl-C reaches
# them through cleanup alone, after the service has begun to shut down.
data_log="${BUILD_STATUS_DIR}/$(printf '%s' "$DATA_IMAGE" | tr -c 'A-Za-z0-9._-' '_').log"
setsid images/build.sh "$DATA_IMAGE" python/data >"$data_log" 2>&1 < /dev/null &
data_pid=$!
node_log="${BUILD_STATUS_DIR}/$(printf '%s' "$NODE_IMAGE" | tr -c 'A-Za-z0-9._-' '_').log"
setsid images/build.sh "$NODE_IMAGE" node >"$node_log" 2>&1 < /dev/null &
node_pid=$!

log "ready to serve in $(secs "$begin" "$t3") s:"
log "  docker (install/start)  $(secs "$t0" "$t1") s"
log "  python image            $(secs "$t1" "$t2") s"
log "  go modules              $go_mod s (alongside the image)"
log "  go build                $go_build s (alongside the image)"
log "  waiting for go build    $(secs "$t2" "$t3") s"
log "the data and node images build in the background (logs: $data_log, $node_log); GET /v1/health says when each is ready"

bin/sandboxd serve &
srv=$!
trap 'kill -INT "$srv" 2>/dev/null || true' INT
trap 'kill -TERM "$srv" 2>/dev/null || true' TERM
status=0
while kill -0 "$srv" 2>/dev/null; do
  wait "$srv" && status=0 || status=$?
done
exit "$status"
