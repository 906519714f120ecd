#!/usr/bin/env bash
# setup.sh installs test/interop/node_modules with `npm ci` when it is missing or was made
# from another package-lock.json (a hash of the lock file is kept beside the modules).
# It needs node (>= 20) and npm on PATH and the npm registry; it works as root.
set -euo pipefail

dir="$(cd "$(dirname "$0")" && pwd)"
cd "$dir"

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "test/interop/setup.sh: $tool is not installed (install Node.js 20 or later with npm)" >&2
    exit 1
  fi
done

want="$(sha256sum package-lock.json | cut -d' ' -f1)"
stamp="node_modules/.package-lock.sha256"
anvil_bin="node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil"
if [ "$(uname -m)" = aarch64 ]; then
  anvil_bin="node_modules/@foundry-rs/anvil-linux-arm64/bin/anvil"
fi

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$anvil_bin" ]; then
  exit 0
fi

echo "test/interop/setup.sh: npm ci in $dir" >&2
# --ignore-scripts: anvil's binary comes in its platform package, and no install script
# may reach beyond the npm registry.
timeout 600 npm ci --no-audit --no-fund --ignore-scripts >&2
if [ ! -x "$anvil_bin" ]; then
  echo "test/interop/setup.sh: $anvil_bin is missing after npm ci" >&2
  exit 1
fi
echo "$want" >"$stamp"
