#!/usr/bin/env bash
# dlq redrive against the brokers' own movers, on the test servers of
# scripts/brokers (make bench sets the environment):
#   RabbitMQ, 100,000 persistent 1 KiB messages, classic and quorum: two
#   dynamic shovels of protocol amqp091 (ack-mode on-confirm), one inside
#   the broker (URI amqp://) and one over TCP (the broker's address), on
#   RabbitMQ 4.2 and later (so 4.3) a third of protocol local (URI
#   amqp://USER@, no AMQP channel at all), and `dlq redrive` with its
#   defaults, moving the same messages. The source is filled as a real DLQ
#   is, by rejecting the messages from a work queue (so each carries
#   x-death), and then, for comparison, by publishing straight into it.
#   SQS (fauxqs), 20,000 messages: a bare receive/send/delete batch loop then
#   `dlq redrive`, with the same concurrency.
# Each set runs REDRIVE_BENCH_RUNS times (RabbitMQ) or REDRIVE_BENCH_SQS_RUNS
# times (SQS), each run starting with a different mover, and the median ratio
# is reported: the machine may be shared, and on a small one dlq and the
# broker compete for the same cores (DLQ_CPUPROFILE=FILE profiles each dlq
# run). REDRIVE_BENCH_N and REDRIVE_BENCH_SQS_N shrink the runs;
# REDRIVE_BENCH_ARGS adds dlq redrive flags (e.g. --no-redrive-header);
# REDRIVE_BENCH_FILLS="dead-lettered" skips the published fill, and
# REDRIVE_BENCH_SQS_RUNS=0 the SQS set.
# Every RabbitMQ set runs on 3.10, 4.0 and 4.3 (REDRIVE_BENCH_RABBITMQ names
# the scripts/brokers instances to run: test, test4, test43).
# No wait hangs: one that takes longer than REDRIVE_BENCH_WAIT (default 10m)
# fails, saying what it waited for and how far it got, and every shovel the
# run created is deleted on the way out, also on a failure or a SIGTERM
# (run it under timeout(1) when in doubt).
# The dead-lettered sets then run again with the broker on half the CPUs and
# redrivebench (its fill and timing, and the dlq it runs) on the other half,
# as when dlq runs on a host of its own: a shovel then works on the broker's
# CPUs alone, while dlq brings its own (REDRIVE_BENCH_SPLIT=0 skips this; it
# pins the shared test broker, so skip it while others use it).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -n "${DLQ_TEST_AMQP_URL:-}" ] || eval "$(scripts/brokers env)"
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-test} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-test} AWS_REGION=${AWS_REGION:-us-east-1}
# This tree's dlq, unless DLQ_TEST_BIN names one.
bin=${DLQ_TEST_BIN:-}
if [ -z "$bin" ]; then
	bin=bin/dlq
	go build -o "$bin" ./cmd/dlq
fi
go build -o bin/redrivebench ./scripts/bench/redrivebench
n=${REDRIVE_BENCH_N:-100000}
sqs_n=${REDRIVE_BENCH_SQS_N:-20000}
runs=${REDRIVE_BENCH_RUNS:-3}
sqs_runs=${REDRIVE_BENCH_SQS_RUNS:-5}
echo "redrive benchmark ($(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg))"
args=${REDRIVE_BENCH_ARGS:-}
wait=${REDRIVE_BENCH_WAIT:-10m}
# Each RabbitMQ version of scripts/brokers in turn: 3.10 (instance test), 4.0
# (test4) and 4.3 (test43); REDRIVE_BENCH_RABBITMQ names the instances to run.
for instance in ${REDRIVE_BENCH_RABBITMQ:-test test4 test43}; do
	export DLQ_BROKERS_INSTANCE=$instance
	eval "$(scripts/brokers env)"
	echo "RabbitMQ $DLQ_TEST_RABBITMQ_VERSION (scripts/brokers instance $instance)"
	for fill in ${REDRIVE_BENCH_FILLS:-dead-lettered published}; do
		for kind in classic quorum; do
			bin/redrivebench -backend rabbitmq -kind "$kind" -fill "$fill" -n "$n" -runs "$runs" -wait "$wait" -dlq "$bin" -args "$args"
		done
	done
	cpus=$(nproc)
	span() { if [ "$1" = "$2" ]; then echo "$1"; else echo "$1-$2"; fi; }
	if [ "${REDRIVE_BENCH_SPLIT:-1}" != 0 ] && [ "$cpus" -ge 2 ]; then
		half=$((cpus / 2))
		broker_cpus=$(span 0 $((half - 1))) client_cpus=$(span "$half" $((cpus - 1)))
		trap 'scripts/brokers pin-rabbitmq all' EXIT
		if scripts/brokers pin-rabbitmq "$broker_cpus"; then
			for kind in classic quorum; do
				taskset -c "$client_cpus" bin/redrivebench -backend rabbitmq -kind "$kind" -fill dead-lettered -n "$n" -runs "$runs" -wait "$wait" -dlq "$bin" -args "$args" \
					-label "broker on CPU $broker_cpus, dlq on $client_cpus"
			done
		fi
		scripts/brokers pin-rabbitmq all
		trap - EXIT
	fi
done
unset DLQ_BROKERS_INSTANCE
if [ "$sqs_runs" != 0 ]; then
	eval "$(scripts/brokers env)"
	bin/redrivebench -backend sqs -n "$sqs_n" -concurrency 4 -runs "$sqs_runs" -wait "$wait" -dlq "$bin" -args "$args"
fi
