#!/usr/bin/env bash
# fuzz.sh runs every fuzz target of the service for FUZZTIME each (60s by
# default), one after the other, and stops at the first failure. A failing
# input is saved by Go under the package's testdata/fuzz/<Target>/ and the
# failure can be replayed with plain `go test -run <Target>/<file> ./<pkg>`.
#
#   test/scripts/fuzz.sh                      # every target, 60 s each
#   FUZZTIME=10m test/scripts/fuzz.sh         # longer
#   test/scripts/fuzz.sh FuzzDemux            # only the named targets
set -euo pipefail

cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/go/bin"
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-60s}
# Minimizing a new input can stall a short run for a minute: keep it short.
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-10s}

# target and package, one pair a line.
targets=(
  "FuzzDecodeObject ./httpapi"
  "FuzzDemux ./runtime"
  "FuzzLoadConfig ./cmd/sandboxd"
  "FuzzParseHeader ./internal/runnerproto"
  "FuzzParseEndReport ./internal/runnerproto"
  "FuzzParseRecords ./internal/runnerproto"
  "FuzzValidName ./internal/runnerproto"
)

want=("$@")
failed=0
for entry in "${targets[@]}"; do
  read -r target pkg <<<"$entry"
  if [ ${#want[@]} -gt 0 ] && [[ ! " ${want[*]} " == *" $target "* ]]; then
    continue
  fi
  printf '\n== %s (%s) for %s\n' "$target" "$pkg" "$FUZZTIME"
  # The integration gates stay off: fuzzing needs neither Docker nor npm.
  if ! env -u CI -u SANDBOXD_INTEGRATION -u SANDBOXD_INTEROP \
      "$GO" test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" \
      -fuzzminimizetime "$FUZZMINIMIZETIME" "$pkg"; then
    printf 'fuzz: %s FAILED; the input is under %s/testdata/fuzz/%s/\n' "$target" "$pkg" "$target" >&2
    failed=1
    break
  fi
done
exit "$failed"
