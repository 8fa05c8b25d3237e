#!/usr/bin/env bash
# dlq redrive against the brokers' own movers, on the test servers of
# scripts/brokers (make bench sets the environment):
#   RabbitMQ, 100,000 persistent 1 KiB messages, classic and quorum: a dynamic
#   shovel (ack-mode on-confirm) then `dlq redrive` moving the same messages.
#   SQS (fauxqs), 20,000 messages: a bare receive/send/delete batch loop then
#   `dlq redrive`, with the same concurrency.
# Each pair runs REDRIVE_BENCH_RUNS times (RabbitMQ) or REDRIVE_BENCH_SQS_RUNS
# times (SQS), alternating, and the median ratio is reported: the machine may
# be shared. REDRIVE_BENCH_N and REDRIVE_BENCH_SQS_N shrink the runs.
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
runs=${REDRIVE_BENCH_RUNS:-2}
sqs_runs=${REDRIVE_BENCH_SQS_RUNS:-5}
echo "redrive benchmark ($(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg))"
bin/redrivebench -backend rabbitmq -kind classic -n "$n" -runs "$runs" -dlq "$bin"
bin/redrivebench -backend rabbitmq -kind quorum -n "$n" -runs "$runs" -dlq "$bin"
bin/redrivebench -backend sqs -n "$sqs_n" -concurrency 4 -runs "$sqs_runs" -dlq "$bin"
