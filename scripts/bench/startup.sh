#!/usr/bin/env bash
# Start-up time of dlq: `dlq --help` and `dlq version`, the median of 20
# runs each (the goal is under 20 ms on the two-core test machine). Shows
# hyperfine's summary too when hyperfine is installed. Needs no broker.
# It also times two floors (below). Package initialisation, the usual
# culprit, is listed by:
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

# The floor under those figures on this machine: a program that prints one
# line, and one that links every package dlq imports from outside itself
# (the standard library, cobra, amqp091, the AWS SDK, gojq, Bubble Tea…)
# and does nothing with them, so it pays their initialisation and its
# binary's page faults but none of dlq's own work.
floor=bin/_startupfloor
rm -rf "$floor" && mkdir -p "$floor/hello" "$floor/libs"
printf 'package main\n\nimport "os"\n\nfunc main() { os.Stdout.WriteString("dlq dev\\n") }\n' >"$floor/hello/main.go"
{
  printf 'package main\n\nimport (\n\t"os"\n\n'
  go list -f '{{join .Imports "\n"}}' ./broker/... ./cmd/... ./inspect/... ./redrive/... ./topology/... ./tui/... |
    sort -u | grep -v -x -E 'github.com/dlq-tools/dlq(/.*)?|os|C|unsafe|embed' | sed 's/.*/\t_ "&"/'
  printf ')\n\nfunc main() { os.Stdout.WriteString("dlq dev\\n") }\n'
} >"$floor/libs/main.go"
CGO_ENABLED=0 go build -o bin/startup-hello "./$floor/hello"
CGO_ENABLED=0 go build -o bin/startup-libs "./$floor/libs"
rm -rf "$floor"
bin/startupbench -runs "$RUNS" bin/startup-hello
bin/startupbench -runs "$RUNS" bin/startup-libs
