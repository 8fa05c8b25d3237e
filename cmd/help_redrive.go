package cmd

import "github.com/spf13/cobra"

const redriveSafetyHelp = `What dlq redrive, discard and purge guarantee, and how.

Nothing is lost
  A message is removed from the source (RabbitMQ basic.ack, SQS
  DeleteMessageBatch, archive: never) only after the destination took
  responsibility for it: a RabbitMQ publisher confirm (published with
  mandatory, so an unroutable message comes back as a return, not a
  confirm), a successful SQS SendMessageBatch entry, an archive write that
  was fsynced. Exactly the confirmed messages of a window are acknowledged;
  everything else stays in the source and is reported by reason
  (unroutable, rejected, invalid-transform, ambiguous-origin, no-origin).
  A crash or kill at any instant can leave a message in both places (at
  most the messages in flight: --window × (--concurrency + 1), plus up to
  1000 held ones on a RabbitMQ classic queue), never in neither. Discard
  and purge with --archive-to follow the same rule with the archive as the
  destination.
  When SQS's answer to a SendMessageBatch is lost (the connection is cut
  or the server restarts after it took the request), the request is sent
  again: the summary lists those messages as possibly at the destination
  twice ("resent" in --output json).

Destinations that drop
  A confirm means the destination took the message, not that it keeps it:
  a RabbitMQ queue with a length limit (x-max-length, x-max-length-bytes or
  the policy's max-length, max-length-bytes) and overflow drop-head (the
  default once it has a limit) drops, or dead-letters, its oldest messages
  to take new ones, and confirms every publish. Before anything is taken,
  a redrive (and its dry run) reads the destination queue's limits from its
  arguments and policies and refuses such a queue, naming the limit;
  --allow-drop accepts it. A queue with overflow reject-publish or
  reject-publish-dlx refuses what it cannot take: those messages stay in
  the source (rejected).

Archives are redriven once
  Reading an archive never changes it, so the same redrive run twice
  would send every message twice. dlq records what each redrive from an
  archive moved ($XDG_STATE_HOME/dlq/redriven: the archive, known by a
  hash of its content and the queue read, so a copy or a rename is the
  same archive; the destination; the message fingerprints; when). Before
  anything is sent, a redrive (and its dry run) from an archive checks its
  selection against that record and refuses the whole run if any of the
  selected messages went to the same destination already, naming how
  many, where and when; --again sends them anyway. The refusal is all or
  nothing: to send only the others, select them (--exclude-id, --filter).

Journal and --resume
  Each run keeps a journal in $XDG_STATE_HOME/dlq/journal (mode 0600),
  locked while the run lives, recording per message fingerprint: published,
  confirmed, acknowledged. ` + "`dlq redrive SOURCE --resume`" + ` reads the journals of
  interrupted runs of SOURCE, finishes with the same destination and
  selection, removes messages that were confirmed but not yet acknowledged
  without sending them again, and lists the messages that were published
  but not confirmed when the run stopped: those were sent again and may be
  at the destination twice. RabbitMQ acknowledgements have no reply, and a
  consumer sends them as one behind the lowest unsettled delivery: the
  report also lists the messages acknowledged in the run's last moments
  (up to the prefetch), whose acknowledgements the broker may never have
  received; any of them still in the source was sent again too. They are
  not removed on sight: a message really removed and dead-lettered again
  since would be lost. Journal lines are written at each step (they
  survive a killed process); the file is fsynced at the end. A run that
  stops before it publishes a message (a missing queue, a refused login)
  removes its journal: there is nothing to resume.
  --resume finishes only the interrupted runs whose destination and
  selection (--to, --filter, --group, --id, --limit, …) are those given
  now; settings not given are taken from the journal. A run confirmed on
  a terminal moves the messages its preview showed, and its journal lists
  them: --resume moves only those, never a message that arrived since,
  even one the selection matches. When none matches,
  or the matching ones differ, it lists them (id, start, source →
  destination, selection) and moves nothing. A run that completes the
  same redrive as an interrupted one (same source, destination and
  selection) closes that journal ("superseded"): later runs no longer
  offer it. ` + "`dlq redrive journals`" + ` lists journals; --prune --interrupted
  removes the interrupted ones (after asking; --yes without a terminal).
  A journal keeps no password: a --to URL is stored redacted
  (amqp://ops:xxxxx@host/), and --resume takes the password again from
  --to given again, from --broker or DLQ_BROKER when they name the same
  broker and user, or from DLQ_PASSWORD. A journal an earlier version
  wrote with a password is rewritten without it when first read.
  On SQS the interrupted run's messages stay hidden until their visibility
  timeout ends: --resume waits for them (up to that timeout after the
  interrupted run's last journal line) instead of stopping at an empty
  queue. A run that ends while its SQS source still hides messages it never
  received (a receive whose answer was lost in a restart or a cut
  connection) says how many, exits 3 (partly done), and stays resumable.

Several processes at once
  Runs on the same queue are competing consumers: RabbitMQ delivers each
  message to one of them; SQS hides a received message from the others for
  the visibility timeout, which dlq extends while it works. No message is
  moved twice beyond what a crash allows. Each run has its own journal.

Messages that are not moved
  Messages a filter, --id, the age flags or --limit leave out, and messages
  that failed, stay in the source unchanged:
  - RabbitMQ classic: up to 1000 are held unacknowledged and returned
    together at the end; RabbitMQ puts them back in their places (order
    kept, redelivered flag set). Beyond that they are rotated (below).
  - RabbitMQ quorum: a return would add 1 to x-delivery-count and move the
    message to the back (with a delivery limit it could be dead-lettered
    away), so they are rotated instead: republished unchanged (x-death
    kept) to the back of the same queue with confirms, then the original is
    acknowledged. The run stops when it meets a message it rotated, after
    one pass over the queue; the cyclic order of the rotated messages is
    kept, and no delivery count goes up. Tested in redrive's test suite.
  - SQS: each is received once per run (ApproximateReceiveCount +1), kept
    hidden while the run lasts, and made visible again at the end. On a FIFO
    queue a held message blocks the rest of its group, which keeps the
    group's order.
  - Archives: read-only; nothing is removed from an archive.

Fidelity
  Body bytes, content type and encoding, message-id, correlation-id,
  timestamp, priority, delivery mode, type, app-id, reply-to, expiration,
  application headers with their AMQP types, and SQS message attributes
  are kept. Death metadata (x-death, x-first-death-*, x-last-death-*,
  x-delivery-count) is stripped, because consumers that count x-death would
  dead-letter the message again at once; --keep-death-headers keeps it
  (as evidence: RabbitMQ 3.13 and later do not continue an x-death that a
  client publishes, and start a new one at the message's next death).
  The failure headers that client frameworks add (Spring's x-exception-*,
  MassTransit's MT-Fault-* and MT-Reason, NServiceBus's
  NServiceBus.ExceptionInfo.*; on SQS, attributes so named) describe the
  failure being redriven and are stripped too, with the origin recorded
  with them (x-original-exchange, x-original-routingKey,
  NServiceBus.FailedQ, NServiceBus.TimeOfFailure);
  --keep-failure-headers keeps them. --reset-retries sets the retry
  counters that frameworks read (Spring's retry-count, MassTransit's
  MT-Fault-RetryCount and MT-Fault-RedeliveryCount, NServiceBus.Retries)
  to 0, keeping their type, and --reset-header NAME an application's own,
  so that a redriven message gets its full retries. A message in an
  envelope (SNS, MassTransit, a Lambda on-failure record) moves exactly as
  it came, envelope included. Discard and purge
  archive messages exactly as they were, with every header. An
  x-dlq-redrive header (a table on RabbitMQ; a String attribute holding
  {"count","time","source","id"} as JSON on SQS) records how often, when
  and from where the message was redriven, and which publish it was (id:
  the run and a sequence number; --no-redrive-header leaves it out).
  --max-redrives N reads that count and leaves every message redriven N
  times already in the source (redrive-limit), so that a scheduled
  redrive does not cycle a poison message for ever.
  SQS allows 10 message attributes: a message that would need an 11th for
  the record (or for --set-header) is refused and counted as
  attribute-limit, never moved without it silently. A --transform result that cannot be
  mapped back faithfully is refused for that message (invalid-transform),
  which stays in the source; nothing half-made is ever published.
  RabbitMQ → SQS: headers and properties become message attributes as
  described in the SQS adapter (dlq-* attributes, overflow in dlq-amqp).
  SQS → RabbitMQ: String attributes become string headers, Number ones
  integers or floats, Binary ones byte strings; MessageId becomes the
  message-id property, so the message keeps its ID.

Order
  dlq publishes --window messages at a time, --concurrency windows at once
  (default 4). Within a window, messages reach the destination in the order
  they were taken from the source. With --concurrency 1 each window is
  confirmed before the next is published, so the whole run keeps the
  source's order (on RabbitMQ: for one destination queue; messages routed
  to several queues keep it in each). With more than one window at once, a
  later window can be confirmed before an earlier one, above all on a busy
  machine, and the destination may then hold them in another order. SQS
  standard queues never promise order; SQS FIFO sources always run one
  window at a time (below). Messages left in the source keep their order
  as "Messages that are not moved" describes.

SQS FIFO
  MessageGroupId is kept and windows go one at a time in receive order, so
  a group's order is kept. A group stops at its first message that stays
  in the source (left out by a selection, refused, or not accepted by the
  destination): no later message of that group moves in this run (counted
  as group-held), and nothing of the group is sent after a message of it
  that failed. Each redriven message gets a NEW deduplication id:
  re-sending the original id within 5 minutes would be silently dropped
  by SQS.

Rate and flow control
  --rate N/s is a token bucket (--ramp raises it from a tenth to N).
  When RabbitMQ blocks publishers (connection.blocked: a memory or disk
  alarm), dlq prints a notice on stderr, pauses, and resumes when the
  broker unblocks.

Ctrl-C
  Stops taking messages, finishes the windows already being published,
  acknowledges exactly what was confirmed, returns the rest, prints the
  summary and exits 3 (partly done) when some messages moved, 2
  (cancelled) when none did. A run that stops on an error after moving
  some messages, or that leaves some it could not move, exits 3 too; run
  it again (or with --resume) to continue.

--dry-run
  Reads the source under the peek-safety rules (` + "`dlq help peek-safety`" + `),
  changes nothing, and prints the count per destination, what would be
  skipped or could not move and why (filtered, ambiguous origin,
  unroutable: RabbitMQ bindings are checked through the management API),
  and exits as the real run would (1 when no message could move, 3 when
  some could not), with before/after diffs
  of the first 3 transformed messages: their body, headers, properties and
  attributes as the --filter document shows them (a binary body as
  body_base64), unchanged lines folded, or the error the transform gave
  for a message; then how many more messages the transform would see. A
  confirmation's preview shows the same diffs; -o json has them in
  "diffs" and the count in "diffs_more".

--server-side
  The broker moves every message itself: SQS StartMessageMoveTask (--rate
  becomes MaxNumberOfMessagesPerSecond, at most 500; ` + "`dlq redrive status`" + `
  and ` + "`dlq redrive cancel`" + `), RabbitMQ a dynamic shovel with ack-mode
  on-confirm and src-delete-after queue-length, followed until done and
  then removed. The broker sees no filter, transform or per-message origin,
  so those flags are refused with --server-side, and death headers are not
  stripped by a shovel. A shovel reports no counts and ends after moving
  the queue's length, even when its destination refused messages (a full
  queue with overflow reject-publish sends them back to the source): when
  it ends with messages still in the source, dlq says how many and exits 3
  (partly done).

Audit and read-only
  Every redrive, discard, purge and cancel appends a record to the audit
  log (` + "`dlq audit`" + `), with the counts of the command's JSON summary:
  a redrive's messages are moved, a discard's or purge's discarded. --read-only, or a context with read_only: true,
  refuses them before anything is touched (exit code 4); --dry-run is
  allowed. The audit log, and the archive of --archive-to, are opened
  before anything is touched too: one that cannot be written refuses the
  command (exit code 1). A record that cannot be written after the change
  (a full disk) makes the command fail (exit code 1, or 2 or 3 when it was
  cancelled or partly done) and says what was done.`

func newHelpRedriveSafety() *cobra.Command {
	return &cobra.Command{
		Use:   "redrive-safety",
		Short: "What redrive, discard and purge guarantee, and how",
		Long:  redriveSafetyHelp,
	}
}
