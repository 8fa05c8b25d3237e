package topology

// SpecGuide explains the spec format; `dlq help topology-spec` prints it
// followed by SchemaReference.
const SpecGuide = `THE TOPOLOGY SPEC (version 1)

A spec is one YAML file, reviewed like code, that declares the retry and
dead-letter topology of one RabbitMQ vhost and/or one SQS account and region.
` + "`dlq topology lint`" + ` checks it offline, ` + "`plan`" + ` shows what would change,
` + "`apply`" + ` makes it so, ` + "`export`" + ` writes what a broker has in this format.

  version: 1
  name_prefix: ""          # prepended to every name (handy for staging, tests)
  rabbitmq:
    vhost: /               # checked against the broker's vhost
    defaults:
      queue_type: quorum   # classic or quorum: an explicit choice is required
      dead_letter_via: policy
    retry_ladders: [...]   # high-level constructs, expanded by dlq
    work_queues: [...]
    exchanges: [...]       # low-level objects, declared as written
    queues: [...]
    bindings: [...]
    policies: [...]
  sqs:
    pairs: [...]
    retry_ladders: [...]
    queues: [...]
  lint:
    ignore: [classic-queue]

Malformed specs are reported as FILE:LINE:COLUMN: PROBLEM, every problem at
once. Durations take a unit: 300ms, 15s, 1m, 2h, 4d.

SAFE DEFAULTS. Exchanges and queues are durable (quorum queues always are).
Every queue needs a type, from its own ` + "`type`/`queue_type`" + ` or from
` + "`rabbitmq.defaults.queue_type`" + `: dlq does not pick classic or quorum for you.
Quorum queues persist every message; on classic queues messages survive a
restart only when published persistent (dlq itself always publishes
persistent). SQS pairs get visibility 30s, retention 4d on the source and 14d
on the DLQ, long polling (receive_wait 20s), and a RedriveAllowPolicy that
admits only the source. Every default can be overridden.

DEAD-LETTERING BY POLICY OR BY ARGUMENTS. ` + "`dead_letter_via: policy`" + ` (the default)
declares queues without dead-letter arguments and puts dead-letter exchange,
routing key, message TTL, delivery limit and max length into one policy per
queue, named QUEUE.dlq-policy, pattern ^QUEUE$, priority 10
(` + "`defaults.policy_priority`" + `). Policies change in place: a later apply updates
them without touching the queue. ` + "`dead_letter_via: arguments`" + ` puts the same
settings into x- queue arguments, as many existing systems do; they are fixed
for the queue's life. Only one policy applies to a queue (the highest
priority); plan warns when a policy outside the spec outranks the spec's.

CONFLICTS. RabbitMQ refuses to re-declare a queue or exchange with other
arguments, type or durability (406 PRECONDITION_FAILED, and the channel
closes). plan finds these from the management API before anything is
declared, and apply refuses to start while there is one. The fixes: when
the spec only adds settings a policy can carry, use dead_letter_via: policy;
otherwise write the queue as it exists (dlq topology export shows it), or
migrate: declare QUEUE.v2, move the messages (a shovel, or dlq redrive),
switch publishers, delete the old queue.

RETRY LADDERS (RabbitMQ). A retry_ladders entry named NAME expands into:

  NAME.main.x (topic) ──routing_keys──▶ NAME.main.q
  NAME.main.q dead-letters ──▶ NAME.retry.x (direct), key of the first tier
  NAME.retry.x ──tier key──▶ one queue per tier, x-message-ttl = delay,
                             dead-lettering back to NAME.main.x with
                             return_routing_key (default: the first main key, wildcards removed)
  NAME.dead.x (fanout) ──▶ NAME.dead.q, the parking lot

One tier is named NAME.retry.q with key NAME.retry; several are named
NAME.retry.DELAY.q with key NAME.retry.DELAY. Every name can be given.

RabbitMQ has no attempt counter across dead-letterings (a quorum delivery
limit counts redeliveries within one queue only and starts again after each
dead-lettering), so max_attempts (default: tiers + 1) is enforced by the
consumer of the main queue: attempt = the retry-attempts header (1 when
absent) + the number of times the message expired from a tier queue since,
from x-death. On a failed attempt n:
  n < max_attempts, first tier   reject it (requeue=false): the main queue's
                                 dead-letter settings route it to tier 1
  n < max_attempts, later tier   publish it to NAME.retry.x with tier
                                 min(n, tiers)'s key, its headers kept but
                                 the death headers (x-death, x-first-death-*,
                                 x-last-death-*), and retry-attempts: n;
                                 wait for the confirm, then ack the original
                                 (RabbitMQ 3.13 and later do not continue an
                                 x-death a client sends, so the count travels
                                 in retry-attempts on every version)
  n ≥ max_attempts               publish it to NAME.dead.x, confirm, ack
The Go package github.com/dlq-tools/dlq/topology implements this rule as
Ladder.OnFailure.

WORK QUEUES. A work_queues entry declares an exchange, the work queue bound
with routing_keys, a dead-letter exchange (dead_letter.exchange, topic by
default) with an optional dead-letter routing key, and the DLQ bound to it
(binding_key, default #). With queue_type: quorum, delivery_limit makes
poison messages leave after N deliveries.

SQS. pairs declare a source and its DLQ (NAME-dlq, or NAME-dlq.fifo for a
FIFO source) with a RedrivePolicy (max_receive_count, default 5). A name
ending in .fifo makes a FIFO queue; content_based_deduplication is for FIFO
queues only. retry_ladders declare a main queue, one delay queue per tier
(NAME-retry-30s, DelaySeconds ≤ 15m) and a DLQ; SQS cannot route, so the
consumer reads every queue of the ladder and sends a failed message to the
next delay queue, and lets it fail past max_receive_count after the last.
apply creates dead-letter queues first so that RedrivePolicy can name their
ARNs, and changes attributes of existing queues in place.

PRUNING. apply never deletes. With --prune it also deletes objects whose
names start with name_prefix and that the spec no longer declares, after
confirmation; a queue that holds messages is a conflict, never deleted.

Examples of every construct: topology/testdata/examples/ in the dlq sources.
`
