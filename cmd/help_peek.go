package cmd

import "github.com/spf13/cobra"

const peekSafetyHelp = `What reading a queue without removing anything does on each kind of queue.
It applies to ` + "`dlq peek`" + `, ` + "`dlq stats`" + `, ` + "`dlq export`" + `, ` + "`redrive --dry-run`" + ` and the TUI.
A peek never removes, drops or dead-letters a message. What it does change is
printed on stderr in one line when it ends (nothing when nothing changed).
When the safe way is impossible dlq refuses (exit code 1), says why and names
the alternative; --force accepts a visible change, never a loss.

RabbitMQ classic queues: --mode hold (the default for peek)
  dlq sets basic.qos to the number of messages it reads, consumes them without
  acknowledging, then returns them all with one basic.nack (requeue), also
  when the peek fails: RabbitMQ puts every held message back in its original
  position, so the order is unchanged (tested). The trace
  left is the redelivered flag on those messages ("20 messages now carry the
  redelivered flag"). At most --max-unacked deliveries (default 5000) are held
  at once, because a client holding hundreds of thousands of unacked messages
  can take a broker down: a larger --limit, or reading all of a deeper queue,
  is refused with the advice to use --mode rotate. The first page arrives in
  the same time whatever the depth.

RabbitMQ --mode rotate (the default for quorum queues before RabbitMQ 4.3,
and what stats and export use on classic queues and on those quorum queues,
since they read everything)
  Each message is republished to the same queue (default exchange, routing
  key = the queue) with its properties and headers, with publisher confirms,
  and the original is acknowledged only after its copy is confirmed. It goes
  a window at a time, however deep the queue (500 deliveries; 8 on a quorum
  queue with a delivery limit): the whole window is received before any copy
  of it is published, and its originals are acknowledged once every copy is
  confirmed, before the next window is delivered. Rotation
  stops after the number of messages the queue held when it began, so the
  queue ends in its original order (messages others publish meanwhile land
  between them). A crash mid-way can leave a message twice, never lose one.
  What changes: redelivered flags and x-delivery-count are reset, the
  delivery's exchange and routing key become "" and the queue name (x-death
  still records where the message came from), per-message TTLs start again.
  The report on stderr says so for the messages it rotated, every time.
  A peek of --limit N rotates the rest of the queue unvisited to keep the
  order; when that would be more than 10,000 messages it is refused (with
  --force only the N visited messages are rotated, and so move to the back).

RabbitMQ quorum queues, 3.x to 4.2
  Every return of a quorum delivery (nack with requeue, a closed channel, the
  management UI's "get messages") adds 1 to x-delivery-count and moves the
  message to the BACK of the queue; with a delivery limit (x-delivery-limit
  argument or delivery-limit policy) a few peeks would dead-letter or drop
  it. So dlq rotates by default (no count ever rises). --mode hold or requeue
  is allowed on a quorum queue without a delivery limit (the report says the
  counts went up) and refused on one with a limit unless --force; even with
  --force, a message within 2 of its limit is rotated instead of returned, so
  no peek ever pushes a message over its limit.

RabbitMQ quorum queues, 4.3 and later: --mode hold (the default)
  A quorum queue's delivery limit counts only failed deliveries there: a
  basic.nack with requeue raises x-acquired-count (every delivery) but not
  x-delivery-count. dlq tells the version from the connection and reads
  these queues as it reads classic queues: it holds the messages and returns
  them with an explicit basic.nack (requeue), never by closing the channel
  (which would count as a failed delivery). Nothing is republished, no
  x-delivery-count rises, nothing is dead-lettered or dropped, whatever the
  delivery limit (0 included), with no --force. Measured on 4.3.6: every
  message keeps its position, its exchange and routing key; the trace left is
  the redelivered flag and x-acquired-count +1 ("20 messages now carry the
  redelivered flag and x-acquired-count +1 (x-delivery-count unchanged, each
  in its place)"). --mode requeue does the same. Such a queue delivers the
  messages returned to it before the others, and puts a returned message at
  the end of those: a read of the first 3 after a read of all 10 would put
  those 3 behind the other 7. So a read there holds on past what it shows
  until it holds a message never delivered before (or the whole queue), and
  gives back each consumer's messages in turn; the report counts every
  message it held. Past the hold bound it says that the order changed.
  A read of more messages
  than the hold bound (--max-unacked, default 5000; stats, export and a dry
  run read the whole queue) is a rotation, as before 4.3, and the report
  says so. Read-only users and --read-only read these queues in hold mode.

RabbitMQ reads that would write: read-only users and --read-only
  Rotating (and rescuing a message near its limit) publishes to the queue's
  default exchange. Before it takes anything, a peek that would do so checks
  that it may: a publish to the default exchange with a routing key that
  names no queue (routed nowhere, so nothing changes) tells whether the user
  has write permission there. Under --read-only (or a context with read_only)
  nothing is ever published. When the peek may not write, a quorum queue with
  a delivery limit is refused before anything is read ("nothing was read or
  changed"), naming why and the fix (exit code 4): a read that returns its
  messages would raise their counts, and a refused publish would return every
  held delivery with x-delivery-count +1. A read that would rotate a classic
  queue holds instead (up to --max-unacked messages; the redelivered flag is
  its only trace), and so does one of a quorum queue on RabbitMQ 4.3; past
  that bound the refusal names what works without writing: a smaller
  --limit, a larger --max-unacked (every message it reads is then held at
  once, in the broker's memory and dlq's; the refusal gives the size), or a
  user with write permission. For a user without write permission a quorum
  queue without a delivery limit (RabbitMQ 3.x) is held too, and the report
  says
  the counts went up; under --read-only it is refused, as no count may rise.

RabbitMQ messages dlq cannot decode
  dlq's AMQP client refuses headers that nest tables or arrays more than 32
  deep or hold more than 8,192 entries in one (a guard against hostile
  input; RabbitMQ accepts both), and would close the connection. dlq checks
  each message's headers before its client reads them, and keeps the
  connection: a read stops at such a message, stops consuming, and gives
  back every delivery it held with an explicit nack (on a classic queue, and
  on a quorum queue of RabbitMQ 4.3 and later, each in its place and with
  its x-delivery-count unchanged). A rotation never leaves a message twice
  then (nothing of the window that holds it was copied), and on a quorum
  queue with a delivery limit below 4.3 at most 8 deliveries get
  x-delivery-count +1. A redrive stops at it the same way, after moving the
  messages before it. A stream shows it, marked, among the others.
  The peek then reads the head of the queue through the management API's
  get, which returns messages as JSON however deep, and shows the message
  with what could be read (header types approximate: integers int64,
  fractions float64), its position, and the mark UNREADABLE (-o json:
  "unreadable", the reason). That get returns each message it reads: a
  classic queue keeps them in place, and a quorum queue without a delivery
  limit only counts. On a quorum queue with a delivery limit it adds 1 to
  the x-delivery-count of each message it reads (RabbitMQ below 4.3), so dlq
  does it there only with --get-unreadable; on 4.3 and later a requeue does
  not count, and the get needs no flag. The command still fails (exit code
  1), naming the message, its position and what to do: dlq discard QUEUE
  --position N --archive-to file://… archives it (as the management API
  returned it) and then removes it; dlq redrive QUEUE --position N --to
  queue:NAME moves it. On a classic queue, and on a quorum queue of 4.3 and
  later, a discard keeps the queue's order and every count: the management
  API reads the messages up to the position, dlq's client holds them (its
  frame check marks the one it cannot read), archives the API's copy,
  acknowledges that message alone and gives the others back in their
  places. Otherwise (a move, or a quorum queue below 4.3) dlq's client
  never reads it: a shovel that takes
  exactly N messages (each acknowledged once its destination confirmed it,
  one delivery held at a time) moves the head of the queue, up to the
  message, into a classic queue of dlq's own; a second moves all but the
  last back to the end of the queue. The management API reads what is left
  (a classic queue keeps it in place). Only when that is a message dlq's
  client refuses is it archived (fsynced) and then removed, or moved on by a
  third shovel; otherwise it goes back to the end of the queue by a shovel
  and dlq refuses, having removed nothing. No delivery is returned by a
  closed channel, so the position holds on quorum queues too; the one
  delivery past the last a shovel takes goes back to its place (on a quorum
  queue below 4.3 with its x-delivery-count +1; on a 4.3 quorum queue to the
  back, with x-delivery-count +1, as a failed delivery).

RabbitMQ streams: --mode stream (the default)
  Streams are read, not consumed: dlq attaches with basic.qos and an
  x-stream-offset (--offset first (default), last, next, an offset number, an
  RFC 3339 time; --since 2h). Streams reject basic.get, which closes the
  whole connection, so dlq never uses it. Nothing changes; the same peek
  returns the same messages every time.

Amazon SQS standard queues: --mode receive (the default)
  SQS has no peek. dlq receives batches of up to 10 and makes each batch
  visible again at once (ChangeMessageVisibilityBatch 0) before showing it, so
  consumers never wait on a peek. Each receive adds 1 to
  ApproximateReceiveCount ("receive count of 20 messages went up by 1"). When the queue
  being peeked has a RedrivePolicy of its own (a DLQ that itself dead-letters),
  a receive could move a message on once it reaches maxReceiveCount, and a
  message's count is unknown until it is received: dlq refuses to peek such a
  queue unless --force, and then reports how many messages reached their
  limit. A full read ends once as many distinct messages as the queue held
  were seen; standard queues have no order to keep.

Amazon SQS FIFO queues
  SQS locks a message group while one of its messages is in flight, and a
  message made visible again returns to the head of its group. A FIFO peek
  therefore holds what it read (at most --max-unacked, default 10,000) until
  the walk ends, then makes everything visible again newest first, so every
  group keeps its order. Only the messages at the head of each group can be
  seen without removing anything; the report says how many were out of reach
  (and nothing of a group with a message in flight elsewhere is seen). stats
  -o json and a dry run's JSON give that number as out_of_reach, stats -o
  prom as dlq_dead_letter_messages_out_of_reach; their counts leave it out.

Archives (file://… and demo:)
  Read from the first line (--offset N starts at line N). Nothing changes.
`

func newHelpPeekSafety() *cobra.Command {
	return &cobra.Command{
		Use:   "peek-safety",
		Short: "What peek, stats and export do to each kind of queue",
		Long:  peekSafetyHelp,
	}
}
