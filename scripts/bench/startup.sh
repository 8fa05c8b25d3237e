#!/usr/bin/env bash
# Start-up time of dlq: `dlq --help` and `dlq version`, the median of 20
# runs each (the goal is under 20 ms on the two-core test machine). Shows
# hyperfine's summary too when hyperfine is installed. Needs no broker.
# Package initialisation, the usual culprit, is listed by:
#   GODEBUG=inittrace=1 bin/dlq version 2>&1 >/dev/null | sort -k5 -n
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${DLQ_BIN:-bin/dlq}
[ -x "$BIN" ] || make build
RUNS=${RUNS:-20}
if command -v hyperfine >/dev/null; then
  hyperfine -N --warmup 3 --runs "$RUNS" "$BIN --help" "$BIN version"
fi
go build -o bin/startupbench ./scripts/bench/startupbench
for args in --help version; do
  bin/startupbench -runs "$RUNS" "$BIN" $args
done
