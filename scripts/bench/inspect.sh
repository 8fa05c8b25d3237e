#!/usr/bin/env bash
# Benchmarks of dlq's inspect commands (run by `make bench`, or alone with
# the servers' environment: eval "$(scripts/brokers env)").
#
#  1. `dlq stats --group-by reason` over generated archives of 1 KiB JSON
#     bodies with mixed reasons (100k and 1M messages) against
#     `jq -s 'group_by(.reason)|…'` (Debian's jq) on the same file: seconds,
#     messages/s and peak RSS (/usr/bin/time -v), the speed-up and how peak
#     RSS changes from the smallest to the largest archive. Targets (issue
#     "Inspect", Benchmarks): at least 10x faster than jq, and the same peak
#     RSS within 10%. dlq's time is the median of 5 runs after a warm-up
#     run (page cache, fresh binary); jq runs once. cpu_s is user + system
#     time, which a busy machine disturbs less than wall time.
#  2. Time to the first page of `dlq peek` (20 messages) on deep queues on
#     RabbitMQ (classic, hold mode) and on the SQS emulator, at a shallow and
#     a deep depth, to show it does not depend on depth.
#
# The machine is often shared: the load average is printed with the
# figures, and wall times on a busy machine are longer.
#
# Sizes (environment):
#   DLQ_BENCH_STATS_N   archive sizes          (default "100000 1000000")
#   DLQ_BENCH_PEEK_N    deep-queue depths      (default "1000 100000"; the
#                       issue's figure is 1000000, about 3 more minutes a backend)
#   DLQ_BENCH_SKIP_JQ=1 skip jq (it needs ~5 GB of RAM and ~30 s at 1M)
#   DLQ_BENCH_SKIP_PEEK=1 skip the deep-queue peeks
#   DLQ_BENCH_DIR       where archives are cached (default /tmp/dlq-bench)
set -euo pipefail
cd "$(dirname "$0")/../.."

STATS_N=${DLQ_BENCH_STATS_N:-"100000 1000000"}
PEEK_N=${DLQ_BENCH_PEEK_N:-"1000 100000"}
DIR=${DLQ_BENCH_DIR:-/tmp/dlq-bench}
mkdir -p "$DIR"
# Always this tree's dlq: a stale binary would measure old code.
BIN="$DIR/dlq"
go build -o "$BIN" ./cmd/dlq
GEN="$DIR/inspectgen"
go build -o "$GEN" ./scripts/bench/inspectgen
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-test} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-test} AWS_REGION=${AWS_REGION:-us-east-1}

# measure: see measure.bash.
. scripts/bench/measure.bash


echo "== dlq stats vs jq -s 'group_by(.reason)|map({reason:.[0].reason,n:length})'"
echo "   (1 KiB JSON bodies, mixed reasons; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-9s %-5s %9s %7s %11s %12s\n' messages tool seconds cpu_s msgs/s peak_RSS_MB
for n in $STATS_N; do
  f="$DIR/stats-$n.jsonl"
  [ -s "$f" ] || { echo "generating $f…" >&2; "$GEN" -n "$n" -o "$f"; }
  median 5 "$BIN" stats "file://$f" --group-by reason --output json
  read_n=$(grep -m1 -o '"read": *[0-9]*' "$DIR/out" | grep -o '[0-9]*$')
  [ "$read_n" = "$n" ] || { echo "dlq stats read $read_n messages of $n" >&2; exit 1; }
  d_secs=$SECS d_cpu=$CPU d_rss=$RSS_MB
  printf '%-9s %-5s %9.2f %7s %11.0f %12s\n' "$n" dlq "$d_secs" "$CPU" "$(ratio "$n" "$d_secs")" "$d_rss"
  track_rss "$n" "$d_rss"
  if [ "${DLQ_BENCH_SKIP_JQ:-}" != 1 ]; then
    measure jq -s 'group_by(.reason)|map({reason:.[0].reason,n:length})' "$f"
    printf '%-9s %-5s %9.2f %7s %11.0f %12s\n' "$n" jq "$SECS" "$CPU" "$(ratio "$n" "$SECS")" "$RSS_MB"
    x=$(ratio "$SECS" "$d_secs")
    verdict=$(awk -v x="$x" 'BEGIN{print (x >= 10) ? "ok" : "MISSED"}')
    summary+=("$(printf '%s messages: dlq %.2f s, jq %.2f s: dlq is %sx faster (target >= 10x): %s; in CPU time %sx' "$n" "$d_secs" "$SECS" "$x" "$verdict" "$(ratio "$CPU" "$d_cpu")")")
  fi
done
print_summary

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

if [ "${DLQ_BENCH_SKIP_PEEK:-}" = 1 ]; then
  exit 0
fi
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
