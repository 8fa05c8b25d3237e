#!/usr/bin/env bash
# dlq redrive against the brokers' own movers, on the test servers of
# scripts/brokers (make bench sets the environment):
#   RabbitMQ, 100,000 persistent 1 KiB messages, classic and quorum: a dynamic
#   shovel (ack-mode on-confirm) then `dlq redrive` moving the same messages.
#   SQS (fauxqs), 20,000 messages: a bare receive/send/delete batch loop then
#   `dlq redrive`, with the same concurrency.
# Each pair runs REDRIVE_BENCH_RUNS times (RabbitMQ) or REDRIVE_BENCH_SQS_RUNS
# times (SQS), alternating, and the median ratio is reported: the machine may
# be shared, and on a small one dlq and the broker compete for the same cores
# (DLQ_CPUPROFILE=FILE profiles each dlq run). REDRIVE_BENCH_N and REDRIVE_BENCH_SQS_N shrink the runs.
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
# dlq adds its x-dlq-redrive record to every message (by default) and a
# shovel adds nothing: the second pair moves the same bytes as the shovel.
for kind in classic quorum; do
	bin/redrivebench -backend rabbitmq -kind "$kind" -n "$n" -runs "$runs" -dlq "$bin"
	echo "  (with --no-redrive-header: the same bytes as the shovel)"
	bin/redrivebench -backend rabbitmq -kind "$kind" -n "$n" -runs "$runs" -dlq "$bin" -args "--no-redrive-header"
done
bin/redrivebench -backend sqs -n "$sqs_n" -concurrency 4 -runs "$sqs_runs" -dlq "$bin"
