#!/usr/bin/env bash
# dlq redrive against the brokers' own movers, on the test servers of
# scripts/brokers (make bench sets the environment):
#   RabbitMQ, 100,000 persistent 1 KiB messages, classic and quorum: a dynamic
#   shovel (ack-mode on-confirm) then `dlq redrive` moving the same messages.
#   SQS (fauxqs), 20,000 messages: a bare receive/send/delete batch loop then
#   `dlq redrive`, with the same concurrency.
# REDRIVE_BENCH_N and REDRIVE_BENCH_SQS_N shrink the runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -n "${DLQ_TEST_AMQP_URL:-}" ] || eval "$(scripts/brokers env)"
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-test} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-test} AWS_REGION=${AWS_REGION:-us-east-1}
bin=${DLQ_TEST_BIN:-bin/dlq}
[ -x "$bin" ] || go build -o "$bin" ./cmd/dlq
go build -o bin/redrivebench ./scripts/bench/redrivebench
n=${REDRIVE_BENCH_N:-100000}
sqs_n=${REDRIVE_BENCH_SQS_N:-20000}
echo "redrive benchmark ($(nproc) cores)"
bin/redrivebench -backend rabbitmq -kind classic -n "$n" -dlq "$bin"
bin/redrivebench -backend rabbitmq -kind quorum -n "$n" -dlq "$bin"
bin/redrivebench -backend sqs -n "$sqs_n" -concurrency 4 -dlq "$bin"
