#!/usr/bin/env bash
# Benchmark of `dlq triage` against `dlq stats` (run by `make bench`, or
# alone): both read the same incident archive of scripts/bench/inspectgen
# (1 KiB JSON bodies, the five templates of an incident) at each size;
# seconds (median of 3 after a warm-up), cpu_s (user + system) and peak
# RSS (/usr/bin/time -v). Targets: triage within 2x of stats in time, and
# its peak RSS flat from the smallest archive to the largest (within 10%).
#
#   DLQ_BENCH_TRIAGE_N  archive sizes (default "100000 1000000")
#   DLQ_BENCH_DIR       where archives are cached (default /tmp/dlq-bench)
set -euo pipefail
cd "$(dirname "$0")/../.."

SIZES=${DLQ_BENCH_TRIAGE_N:-"100000 1000000"}
DIR=${DLQ_BENCH_DIR:-/tmp/dlq-bench}
mkdir -p "$DIR"
BIN="$DIR/dlq"
go build -o "$BIN" ./cmd/dlq
GEN="$DIR/inspectgen"
go build -o "$GEN" ./scripts/bench/inspectgen

# measure, median, ratio, track_rss, print_summary: see measure.bash.
. scripts/bench/measure.bash

echo "== dlq triage vs dlq stats on the same incident archive"
echo "   ($(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-9s %-7s %9s %7s %11s %12s\n' messages command seconds cpu_s msgs/s peak_RSS_MB
for n in $SIZES; do
  f="$DIR/incident-$n.jsonl"
  [ -s "$f" ] || { echo "generating $f…" >&2; "$GEN" -templates 0 -n "$n" -o "$f"; }
  median 3 "$BIN" stats "file://$f" --output json
  s_secs=$SECS s_cpu=$CPU s_rss=$RSS_MB
  printf '%-9s %-7s %9.2f %7s %11.0f %12s\n' "$n" stats "$s_secs" "$s_cpu" "$(ratio "$n" "$s_secs")" "$s_rss"
  median 3 "$BIN" triage "file://$f" --output json
  total=$(grep -m1 -o '"total": *[0-9]*' "$DIR/out" | grep -o '[0-9]*$')
  [ "$total" = "$n" ] || { echo "dlq triage counted $total messages of $n" >&2; exit 1; }
  printf '%-9s %-7s %9.2f %7s %11.0f %12s\n' "$n" triage "$SECS" "$CPU" "$(ratio "$n" "$SECS")" "$RSS_MB"
  track_rss "$n" "$RSS_MB"
  t_ratio=$(ratio "$CPU" "$s_cpu")
  verdict=$(awk -v r="$t_ratio" 'BEGIN{print (r <= 2) ? "ok" : "MISSED"}')
  summary+=("$n messages: triage cpu ${CPU}s vs stats ${s_cpu}s = ${t_ratio}x (target at most 2x): $verdict; peak RSS ${RSS_MB} MB vs ${s_rss} MB")
done
print_summary
