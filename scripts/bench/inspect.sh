#!/usr/bin/env bash
# Benchmarks of dlq's inspect commands (run by `make bench`, or alone after
# `make build` with the servers' environment: eval "$(scripts/brokers env)").
#
#  1. `dlq stats` over generated archives of 1 KiB JSON bodies (100k and 1M
#     messages) against `jq -s 'group_by(.reason)|…'` on the same file:
#     messages/s and peak RSS (/usr/bin/time -v).
#  2. Time to the first page of `dlq peek` (20 messages) on deep queues on
#     RabbitMQ (classic, hold mode) and on the SQS emulator, at a shallow and
#     a deep depth, to show it does not depend on depth.
#
# Sizes (environment):
#   DLQ_BENCH_STATS_N   archive sizes          (default "100000 1000000")
#   DLQ_BENCH_PEEK_N    deep-queue depths      (default "1000 100000"; the
#                       issue's figure is 1000000, about 3 more minutes a backend)
#   DLQ_BENCH_SKIP_JQ=1 skip jq (it needs ~10 GB of RAM at 1M)
#   DLQ_BENCH_DIR       where archives are cached (default /tmp/dlq-bench)
set -euo pipefail
cd "$(dirname "$0")/../.."

STATS_N=${DLQ_BENCH_STATS_N:-"100000 1000000"}
PEEK_N=${DLQ_BENCH_PEEK_N:-"1000 100000"}
DIR=${DLQ_BENCH_DIR:-/tmp/dlq-bench}
mkdir -p "$DIR"
BIN=bin/dlq
[ -x "$BIN" ] || go build -o "$BIN" ./cmd/dlq
GEN="$DIR/inspectgen"
go build -o "$GEN" ./scripts/bench/inspectgen
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-test} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-test} AWS_REGION=${AWS_REGION:-us-east-1}

# measure CMD… : runs CMD with /usr/bin/time -v, output discarded; sets SECS and RSS_MB.
measure() {
  local log="$DIR/time.log"
  /usr/bin/time -v "$@" >/dev/null 2>"$log" || { echo "failed: $*" >&2; tail -5 "$log" >&2; return 1; }
  SECS=$(awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$log")
  RSS_MB=$(awk -F': ' '/Maximum resident set size/{printf "%.1f", $2/1024}' "$log")
}

echo "== dlq stats vs jq -s group_by (1 KiB JSON bodies, mixed reasons)"
printf '%-9s %-6s %10s %12s %10s\n' messages tool seconds msgs/s peak_MB
for n in $STATS_N; do
  f="$DIR/stats-$n.jsonl"
  [ -s "$f" ] || "$GEN" -n "$n" -o "$f"
  measure "$BIN" stats "file://$f" --group-by reason --output json
  d_secs=$SECS d_rss=$RSS_MB
  printf '%-9s %-6s %10s %12.0f %10s\n' "$n" dlq "$d_secs" "$(echo "$n / $d_secs" | bc -l)" "$d_rss"
  if [ "${DLQ_BENCH_SKIP_JQ:-}" != 1 ]; then
    measure jq -s 'group_by(.reason)|map({reason:.[0].reason,n:length})' "$f"
    printf '%-9s %-6s %10s %12.0f %10s   dlq is %.1fx faster\n' "$n" jq "$SECS" "$(echo "$n / $SECS" | bc -l)" "$RSS_MB" "$(echo "$SECS / $d_secs" | bc -l)"
  fi
done

first_page() { # median wall time of 5 runs of `dlq peek … --limit 20`, in ms
  local times=()
  for _ in 1 2 3 4 5; do
    local t0 t1
    t0=$(date +%s%N)
    "$@" --limit 20 --output json >/dev/null 2>&1 || { echo "peek failed: ${*:1:2}" >&2; return 1; }
    t1=$(date +%s%N)
    times+=($(( (t1 - t0) / 1000000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n 3p
}

echo
echo "== time to the first page of dlq peek (20 messages, whole process, median of 5)"
printf '%-26s %10s %12s\n' backend depth first_page_ms
if [ -n "${DLQ_TEST_AMQP_URL:-}" ]; then
  q="dlq-bench-deep-$$"
  trap '"$GEN" -rabbit "$DLQ_TEST_AMQP_URL" -queue "$q" -delete >/dev/null 2>&1 || true' EXIT
  have=0
  for n in $PEEK_N; do
    "$GEN" -rabbit "$DLQ_TEST_AMQP_URL" -queue "$q" -n $((n - have)) -size 256
    have=$n
    ms=$(first_page "$BIN" peek --broker "$DLQ_TEST_AMQP_URL" --management-url "$DLQ_TEST_MGMT_URL" "$q")
    printf '%-26s %10s %12s\n' "rabbitmq classic (hold)" "$n" "$ms"
  done
  "$GEN" -rabbit "$DLQ_TEST_AMQP_URL" -queue "$q" -delete
else
  echo "rabbitmq: skipped (no DLQ_TEST_AMQP_URL: eval \"\$(scripts/brokers env)\")"
fi
if [ -n "${DLQ_TEST_SQS_ENDPOINT:-}" ]; then
  sq="dlq-bench-deep-$$"
  have=0
  for n in $PEEK_N; do
    "$GEN" -sqs "$DLQ_TEST_SQS_ENDPOINT" -queue "$sq" -n $((n - have)) -size 256
    have=$n
    ms=$(first_page "$BIN" peek --broker sqs://us-east-1 --endpoint-url "$DLQ_TEST_SQS_ENDPOINT" "$sq")
    printf '%-26s %10s %12s\n' "sqs standard (fauxqs)" "$n" "$ms"
  done
  "$GEN" -sqs "$DLQ_TEST_SQS_ENDPOINT" -queue "$sq" -delete
else
  echo "sqs: skipped (no DLQ_TEST_SQS_ENDPOINT)"
fi
