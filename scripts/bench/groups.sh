#!/usr/bin/env bash
# Benchmarks of failure groups (run by `make bench`, or alone):
#
#  1. `dlq stats` (reasons grouped by shape, the default) over incident
#     archives (five failure templates with variable parts: ids, numbers,
#     UUIDs, quoted dates; 256-byte bodies) of 100k and 1M messages, against
#     jq 1.6 streaming the same file, `jq -n 'reduce inputs as $m ({}; …)'`,
#     with the same reason rule (the x-exception-message header, variable
#     parts masked with gsub). Seconds (wall and CPU), messages/s, peak RSS.
#     Targets: dlq at least 10x faster than jq; peak RSS within 10% from
#     100k to 1M.
#  2. 1M messages from 100,000 distinct templates: memory stays bounded by
#     --max-groups (default 10,000; the rest is counted as "(other)").
#  3. Mixed framework dead letters (Spring with Java traces, MassTransit
#     envelopes, NServiceBus with .NET inner exceptions, SNS envelopes,
#     Lambda on-failure records, EventBridge attributes, Celery tasks
#     dead-lettered by RabbitMQ, plain bodies;
#     256-byte payloads), decoded with no configuration, against jq with
#     the same rule (root cause of a trace, type and message, the error
#     inside an envelope), also at 1M: the decoders keep dlq >= 10x jq in
#     flat memory.
#
# dlq's figures are the median of 3 runs after a warm-up run; jq runs once.
# The machine is often shared: the load average is printed with the figures.
#
#   DLQ_BENCH_GROUPS_N   archive sizes (default "100000 1000000")
#   DLQ_BENCH_FRAMEWORKS_N  sizes of the mixed framework archives (default "100000 1000000")
#   DLQ_BENCH_SKIP_JQ=1  skip jq (about 7 minutes at 1M)
#   DLQ_BENCH_DIR        where archives are cached (default /tmp/dlq-bench)
set -euo pipefail
cd "$(dirname "$0")/../.."

SIZES=${DLQ_BENCH_GROUPS_N:-"100000 1000000"}
FW_SIZES=${DLQ_BENCH_FRAMEWORKS_N:-"100000 1000000"}
DIR=${DLQ_BENCH_DIR:-/tmp/dlq-bench}
mkdir -p "$DIR"
BIN="$DIR/dlq-groups"
go build -o "$BIN" ./cmd/dlq
GEN="$DIR/inspectgen"
go build -o "$GEN" ./scripts/bench/inspectgen

# The reason rule of dlq's shapes, as far as jq's regexes go.
# shellcheck disable=SC2016 # a jq program: its $m is jq's
JQ_PROG='def shape:
  gsub("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"; "<uuid>")
  | gsub("\"[^\"]*\""; "\"<str>\"")
  | gsub("[A-Za-z]+[-_][0-9]+"; "<id>")
  | gsub("[0-9]+ms"; "<time>")
  | gsub("[0-9]+"; "<num>");
reduce inputs as $m ({}; (($m.headers["x-exception-message"].value // $m.death.reason // "(unknown)") | shape) as $k | .[$k] += 1)'

MEASURE_OUT=$DIR/groups-out
. scripts/bench/measure.bash


echo "== dlq stats (failure groups) vs jq -n 'reduce inputs as \$m ({}; …)' with the same reason rule"
echo "   (incident archives, 256-byte bodies; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-9s %-5s %9s %7s %11s %12s %7s\n' messages tool seconds cpu_s msgs/s peak_RSS_MB groups
for n in $SIZES; do
  f="$DIR/groups-incident-$n.jsonl"
  [ -s "$f" ] || { echo "generating $f…" >&2; "$GEN" -n "$n" -templates 0 -size 256 -o "$f"; }
  median 3 "$BIN" stats "file://$f" --output json
  groups=$(grep -c '"template"' "$DIR/groups-out" || true)
  d_secs=$SECS d_cpu=$CPU d_rss=$RSS_MB
  printf '%-9s %-5s %9.2f %7s %11.0f %12s %7s\n' "$n" dlq "$d_secs" "$d_cpu" "$(ratio "$n" "$d_secs")" "$d_rss" "$groups"
  track_rss "$n" "$d_rss"
  if [ "${DLQ_BENCH_SKIP_JQ:-}" != 1 ]; then
    measure jq -n "$JQ_PROG" "$f"
    groups=$(grep -c '": [0-9]' "$DIR/groups-out" || true)
    printf '%-9s %-5s %9.2f %7s %11.0f %12s %7s\n' "$n" jq "$SECS" "$CPU" "$(ratio "$n" "$SECS")" "$RSS_MB" "$groups"
    x=$(ratio "$SECS" "$d_secs")
    verdict=$(awk -v x="$x" 'BEGIN{print (x >= 10) ? "ok" : "MISSED"}')
    summary+=("$(printf '%s messages: dlq %.2f s, jq %.2f s: dlq is %sx faster (target >= 10x): %s; in CPU time %sx' "$n" "$d_secs" "$SECS" "$x" "$verdict" "$(ratio "$CPU" "$d_cpu")")")
  fi
done

# The reason rule of dlq's framework decoders, as far as jq goes: the
# innermost Caused by: of a Java trace, MassTransit's type and message, the
# innermost inner exception of a .NET trace, EventBridge's code and
# message, a Lambda record's errorType and errorMessage, a Celery task's
# death reason, a body's error.
# shellcheck disable=SC2016 # a jq program: its $m is jq's
JQ_FW_PROG='def shape:
  gsub("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"; "<uuid>")
  | gsub("\"[^\"]*\""; "\"<str>\"")
  | gsub("[A-Za-z]+[-_][0-9]+"; "<id>")
  | gsub("[0-9]+ms"; "<time>")
  | gsub("[0-9]+"; "<num>");
def reason:
  (.headers // {}) as $h | (.attributes // {}) as $a |
  if $h["x-exception-stacktrace"] then [$h["x-exception-stacktrace"].value | scan("Caused by: ([^\n]*)")] | last | .[0]
  elif $h["MT-Fault-Message"] then $h["MT-Fault-ExceptionType"].value + ": " + $h["MT-Fault-Message"].value
  elif $h["NServiceBus.ExceptionInfo.StackTrace"] then [$h["NServiceBus.ExceptionInfo.StackTrace"].value | scan("---> ([^\n]*)")] | last | .[0]
  elif $a["ERROR_MESSAGE"] then $a["ERROR_CODE"].string_value + ": " + $a["ERROR_MESSAGE"].string_value
  elif $h["task"] and $h["lang"] then .death.reason // "(unknown)"
  else (.body | fromjson? // {}) as $b
    | if ($b | type) != "object" then "(unknown)"
      elif $b.responsePayload then $b.responsePayload.errorType + ": " + $b.responsePayload.errorMessage
      else $b.error // "(unknown)" end
  end;
reduce inputs as $m ({}; ($m | reason | shape) as $k | .[$k] += 1)'

echo
echo "== dlq stats vs jq over mixed framework dead letters (Spring, MassTransit, NServiceBus, SNS, Lambda, EventBridge, Celery, plain)"
echo "   (256-byte payloads; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-9s %-5s %9s %7s %11s %12s %7s\n' messages tool seconds cpu_s msgs/s peak_RSS_MB groups
fw_first="" fw_last=""
for n in $FW_SIZES; do
  # -v2: with Celery (a cached archive of an older generator is not reused)
  f="$DIR/groups-frameworks-v2-$n.jsonl"
  [ -s "$f" ] || { echo "generating $f…" >&2; "$GEN" -n "$n" -frameworks -size 256 -o "$f"; }
  median 3 "$BIN" stats "file://$f" --output json
  groups=$(grep -c '"template"' "$DIR/groups-out" || true)
  d_secs=$SECS d_cpu=$CPU d_rss=$RSS_MB
  printf '%-9s %-5s %9.2f %7s %11.0f %12s %7s\n' "$n" dlq "$d_secs" "$d_cpu" "$(ratio "$n" "$d_secs")" "$d_rss" "$groups"
  [ -n "$fw_first" ] || fw_first="$d_rss MB at $n messages"
  fw_last="$d_rss MB at $n"
  if [ "${DLQ_BENCH_SKIP_JQ:-}" != 1 ]; then
    measure jq -n "$JQ_FW_PROG" "$f"
    groups=$(grep -c '": [0-9]' "$DIR/groups-out" || true)
    printf '%-9s %-5s %9.2f %7s %11.0f %12s %7s\n' "$n" jq "$SECS" "$CPU" "$(ratio "$n" "$SECS")" "$RSS_MB" "$groups"
    x=$(ratio "$SECS" "$d_secs")
    verdict=$(awk -v x="$x" 'BEGIN{print (x >= 10) ? "ok" : "MISSED"}')
    summary+=("$(printf 'frameworks, %s messages: dlq %.2f s, jq %.2f s: dlq is %sx faster (target >= 10x): %s; in CPU time %sx' "$n" "$d_secs" "$SECS" "$x" "$verdict" "$(ratio "$CPU" "$d_cpu")")")
  fi
done

many="$DIR/groups-many-1000000.jsonl"
[ -s "$many" ] || { echo "generating $many…" >&2; "$GEN" -n 1000000 -templates 100000 -size 256 -o "$many"; }
median 3 "$BIN" stats "file://$many" --output json
folded=$(grep -m1 -o '"folded": *[0-9]*' "$DIR/groups-out" | grep -o '[0-9]*$' || echo 0)
printf '%-9s %-5s %9.2f %7s %11.0f %12s %7s\n' "1000000" dlq "$SECS" "$CPU" "$(ratio 1000000 "$SECS")" "$RSS_MB" "100000 templates"
summary+=("frameworks: dlq peak RSS $fw_first, $fw_last")
print_summary
echo "  1,000,000 messages from 100,000 templates: peak RSS $RSS_MB MB, $folded messages beyond --max-groups counted as (other)"
