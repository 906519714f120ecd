#!/usr/bin/env bash
# latency.sh measures what a way of calling adds to a call, as the medians of N (default 50)
# calls of each kind, alternated (see test/interop/latency_test.go):
#   paid  calls to a free sandboxd against paid calls (the official x402 client's whole
#         exchange) to one settling on a local anvil chain in onchain mode;
#   mcp   plain POST /v1/code calls against run_python tools/calls by the official MCP
#         client, on one free sandboxd.
#   test/scripts/latency.sh paid|mcp [N]
set -euo pipefail

case "${1:-}" in
  paid) test='TestPaidLatency' ;;
  mcp) test='TestMCPLatency' ;;
  *) echo "usage: $0 paid|mcp [N]" >&2; exit 2 ;;
esac
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
"$root/test/interop/setup.sh"
"$root/scripts/docker-up.sh"
SANDBOXD_INTEROP=1 SANDBOXD_INTEROP_LATENCY=1 SANDBOXD_LATENCY_N="${2:-50}" \
  go test -count=1 -run "^${test}\$" -v -timeout 15m ./test/interop/
