#!/usr/bin/env bash
# Time `dlq queues` against each backend: the demo archive, a 100,000-message
# archive, RabbitMQ and the SQS emulator (fauxqs), each with 40 queues
# (20 work queues dead-lettering into 20 DLQs). Prints hyperfine's summary
# (or a plain timing loop without hyperfine) and exits 0 on success.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${DLQ_BIN:-bin/dlq}
[ -x "$BIN" ] || go build -o "$BIN" ./cmd/dlq
eval "$(scripts/brokers env)"
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-test} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-test} AWS_REGION=${AWS_REGION:-us-east-1}
N=20
tag="dlqbench-$$"
tmp=$(mktemp -d)
mgmt() { curl -fsS -u "dlqtest:$DLQ_TEST_PASSWORD" -H 'content-type: application/json' -X "$1" "$DLQ_TEST_MGMT_URL/api$2" ${3:+-d "$3"} >/dev/null; }
sqs() { curl -fsS -H 'content-type: application/x-amz-json-1.0' -H "x-amz-target: AmazonSQS.$1" \
  -H 'authorization: AWS4-HMAC-SHA256 Credential=test/20250101/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=0' \
  "$DLQ_TEST_SQS_ENDPOINT/" -d "$2"; }

cleanup() {
  for i in $(seq 1 $N); do
    mgmt DELETE "/queues/%2F/$tag-q$i" || true
    mgmt DELETE "/queues/%2F/$tag-q$i.dlq" || true
    sqs DeleteQueue "{\"QueueUrl\":\"$DLQ_TEST_SQS_ENDPOINT/000000000000/$tag-q$i\"}" >/dev/null 2>&1 || true
    sqs DeleteQueue "{\"QueueUrl\":\"$DLQ_TEST_SQS_ENDPOINT/000000000000/$tag-q$i-dlq\"}" >/dev/null 2>&1 || true
  done
  mgmt DELETE "/exchanges/%2F/$tag.dlx" || true
  rm -rf "$tmp"
}
trap cleanup EXIT

mgmt PUT "/exchanges/%2F/$tag.dlx" '{"type":"direct","durable":false}'
for i in $(seq 1 $N); do
  mgmt PUT "/queues/%2F/$tag-q$i.dlq" '{"durable":false}'
  mgmt POST "/bindings/%2F/e/$tag.dlx/q/$tag-q$i.dlq" "{\"routing_key\":\"$tag-q$i\"}"
  mgmt PUT "/queues/%2F/$tag-q$i" "{\"durable\":false,\"arguments\":{\"x-dead-letter-exchange\":\"$tag.dlx\"}}"
  dlq_url=$(sqs CreateQueue "{\"QueueName\":\"$tag-q$i-dlq\"}" | sed 's/.*"QueueUrl":"\([^"]*\)".*/\1/')
  arn=$(sqs GetQueueAttributes "{\"QueueUrl\":\"$dlq_url\",\"AttributeNames\":[\"QueueArn\"]}" | sed 's/.*"QueueArn":"\([^"]*\)".*/\1/')
  sqs CreateQueue "{\"QueueName\":\"$tag-q$i\",\"Attributes\":{\"RedrivePolicy\":\"{\\\"deadLetterTargetArn\\\":\\\"$arn\\\",\\\"maxReceiveCount\\\":\\\"3\\\"}\"}}" >/dev/null
done

# A 100,000-message archive, written by dlq itself (export of the demo
# sample, repeated).
big="$tmp/big.jsonl.gz"
for _ in $(seq 1 285); do "$BIN" export --broker demo: --append --to "file://$big" demo: >/dev/null 2>&1 || true; done
if [ ! -s "$big" ]; then big=""; fi

cmds=(
  "$BIN queues --broker demo: -o json"
  "$BIN queues --broker $DLQ_TEST_AMQP_URL --management-url $DLQ_TEST_MGMT_URL -o json"
  "$BIN queues --broker sqs://us-east-1 --endpoint-url $DLQ_TEST_SQS_ENDPOINT -o json"
)
names=("demo: (350 messages)" "RabbitMQ (local, vhost /)" "SQS (fauxqs)")
if [ -n "$big" ]; then
  cmds+=("$BIN queues --broker file://$big -o json")
  names+=("archive, $(( $(zcat "$big" | grep -vc dlq_archive) )) messages")
fi
# shellcheck disable=SC2086 # each command line is split into its words
for i in "${!cmds[@]}"; do "${cmds[$i]%% *}" ${cmds[$i]#* } >/dev/null; done # warm and check

echo "== dlq queues timings"
if command -v hyperfine >/dev/null; then
  args=()
  for i in "${!cmds[@]}"; do args+=(-n "${names[$i]}" "${cmds[$i]}"); done
  # The management URL carries no password; the AMQP URL does: hyperfine
  # prints the command names only (-n), never the command lines, with -N.
  hyperfine -N --warmup 2 --runs 15 --style basic "${args[@]}" 2>&1 | grep -v "$DLQ_TEST_PASSWORD" || true
else
  for i in "${!cmds[@]}"; do
    start=$(date +%s%N)
    for _ in $(seq 1 10); do ${cmds[$i]} >/dev/null; done
    echo "${names[$i]}: $(( ($(date +%s%N) - start) / 10000000 )) ms per run"
  done
fi
