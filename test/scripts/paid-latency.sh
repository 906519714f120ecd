#!/usr/bin/env bash
# paid-latency.sh measures what paying adds to a call: the median of N (default 50) calls
# to a free sandboxd and of N paid calls (the official x402 client's whole exchange) to one
# settling on a local anvil chain in onchain mode, alternated. See test/interop/latency_test.go.
#   test/scripts/paid-latency.sh [N]
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
"$root/test/interop/setup.sh"
"$root/scripts/docker-up.sh"
SANDBOXD_INTEROP=1 SANDBOXD_INTEROP_LATENCY=1 SANDBOXD_LATENCY_N="${1:-50}" \
  go test -count=1 -run '^TestPaidLatency$' -v -timeout 15m ./test/interop/
