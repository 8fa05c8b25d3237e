#!/usr/bin/env bash
# The Go runtime settings dlq changes (cmd/runtime.go), each measured
# against Go's default by setting the environment variable that turns the
# setting off (run by `make bench`, or alone with the servers' environment:
# eval "$(scripts/brokers env)"):
#  1. `dlq stats` collects garbage more often: stats over archives of
#     RUNTIME_BENCH_STATS_N messages (default "100000 1000000"), as dlq
#     runs it and with GOGC=100: median cpu_s of three runs and the largest
#     peak RSS.
#  2. Moves run on one processor: `dlq redrive` of RUNTIME_BENCH_N messages
#     (default 50000) between two classic queues on RabbitMQ 3.10, as dlq
#     runs it and with GOMAXPROCS=$(nproc), alternating, three runs each:
#     median seconds, cpu_s and CPU milliseconds per 1,000 messages.
# The machine may be shared: the load average is printed with the figures.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -n "${DLQ_TEST_AMQP_URL:-}" ] || eval "$(scripts/brokers env)"
DIR=${DLQ_BENCH_DIR:-/tmp/dlq-bench}
mkdir -p "$DIR"
BIN="$DIR/dlq-runtime"
go build -o "$BIN" ./cmd/dlq
GEN="$DIR/inspectgen"
go build -o "$GEN" ./scripts/bench/inspectgen
ncpu=$(nproc)
export DLQ_BROKER=$DLQ_TEST_AMQP_URL

MEASURE_OUT=/dev/null
. scripts/bench/measure.bash
middle() { printf '%s\n' "$@" | sort -g | sed -n "$((($# + 1) / 2))p"; }

echo "== dlq stats: GOGC $( grep -oE 'statsGCPercent = [0-9]+' cmd/runtime.go | grep -oE '[0-9]+$') (dlq) against 100 (Go's default)"
echo "   ($ncpu CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-9s %-9s %7s %12s\n' messages setting cpu_s peak_RSS_MB
for n in ${RUNTIME_BENCH_STATS_N:-100000 1000000}; do
	f="$DIR/stats-$n.jsonl"
	[ -s "$f" ] || "$GEN" -n "$n" -o "$f"
	for setting in dlq GOGC=100; do
		runs=() rss=0
		for _ in 1 2 3; do
			if [ "$setting" = dlq ]; then measure "$BIN" stats "file://$f" --group-by reason -o json; else measure env GOGC=100 "$BIN" stats "file://$f" --group-by reason -o json; fi
			runs+=("$CPU")
			rss=$(awk -v a="$RSS_MB" -v b="$rss" 'BEGIN{print (a > b) ? a : b}')
		done
		printf '%-9s %-9s %7s %12s\n' "$n" "$setting" "$(middle "${runs[@]}")" "$rss"
	done
done

n=${RUNTIME_BENCH_N:-50000}
src=bench.runtime.a dst=bench.runtime.b
cleanup() { "$GEN" -rabbit "$DLQ_TEST_AMQP_URL" -queue "$src" -delete >/dev/null 2>&1 || true; "$GEN" -rabbit "$DLQ_TEST_AMQP_URL" -queue "$dst" -delete >/dev/null 2>&1 || true; }
trap cleanup EXIT
cleanup
"$GEN" -rabbit "$DLQ_TEST_AMQP_URL" -queue "$dst" -n 0 >/dev/null
"$GEN" -rabbit "$DLQ_TEST_AMQP_URL" -queue "$src" -n "$n" >/dev/null
echo
echo "== dlq redrive of $n messages between classic queues on RabbitMQ ${DLQ_TEST_RABBITMQ_VERSION:-3.10}: one processor (dlq) against GOMAXPROCS=$ncpu"
echo "   (load average $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-14s %7s %7s %16s\n' setting seconds cpu_s cpu_ms_per_1000
declare -A secs cpu
for _ in 1 2 3; do
	for setting in dlq "GOMAXPROCS=$ncpu"; do
		if [ "$setting" = dlq ]; then
			measure "$BIN" redrive "$src" --to "queue:$dst" --yes -o json
		else
			measure env "$setting" "$BIN" redrive "$src" --to "queue:$dst" --yes -o json
		fi
		secs[$setting]+="$SECS " cpu[$setting]+="$CPU "
		t=$src src=$dst dst=$t
	done
done
for setting in dlq "GOMAXPROCS=$ncpu"; do
	# shellcheck disable=SC2086
	s=$(middle ${secs[$setting]}) c=$(middle ${cpu[$setting]})
	printf '%-14s %7s %7s %16s\n' "$setting" "$s" "$c" "$(awk -v c="$c" -v n="$n" 'BEGIN{printf "%.1f", c * 1000000 / n}')"
done
