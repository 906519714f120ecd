#!/usr/bin/env bash
# mcp-latency.sh measures what MCP adds to a call: the median of N (default 50) plain
# POST /v1/code calls and of N run_python tools/calls by the official MCP client, alternated,
# against one free sandboxd. See test/interop/latency_test.go.
#   test/scripts/mcp-latency.sh [N]
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
"$root/test/interop/setup.sh"
"$root/scripts/docker-up.sh"
SANDBOXD_INTEROP=1 SANDBOXD_INTEROP_LATENCY=1 SANDBOXD_LATENCY_N="${1:-50}" \
  go test -count=1 -run '^TestMCPLatency$' -v -timeout 15m ./test/interop/
