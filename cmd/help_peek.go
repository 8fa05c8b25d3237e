package cmd

import "github.com/spf13/cobra"

const peekSafetyHelp = `What reading a queue without removing anything does on each kind of queue.
It applies to ` + "`dlq peek`" + `, ` + "`dlq stats`" + `, ` + "`dlq export`" + `, ` + "`redrive --dry-run`" + ` and the TUI.
Every peek ends by printing on stderr what it changed, or nothing when it
changed nothing. A peek never removes, drops or dead-letters a message; when
the safe way is impossible dlq refuses (exit code 1) and says why and what to
use instead. --force accepts a visible change (a flag, a count), never a loss.

RabbitMQ classic queues (default --mode hold)
  dlq consumes up to --limit messages with manual acknowledgement and holds
  them unacknowledged, then returns them all at once (basic.nack requeue).
  RabbitMQ puts returned messages back in their original positions, so the
  order is unchanged (tested), but each returned message now carries the
  redelivered flag. At most --max-unacked deliveries are held at once (a
  client holding hundreds of thousands of unacked messages can take a broker
  down); a peek that would need more is refused: use --mode rotate.
  --mode rotate (the mode stats and export use to read a whole queue)
  republishes each message to the back of the same queue with publisher
  confirms, and acks the original only after the copy is confirmed. A full
  rotation leaves the same messages in the same order, without the
  redelivered flag and without raising any count, holding at most a small
  window unacked. While it runs, messages published by others interleave
  with the rotated ones, and a crash can leave a duplicate (never a loss).

RabbitMQ quorum queues (default --mode rotate)
  Every return of a delivery (nack with requeue, a channel closed with
  unacked messages, the management UI's "get messages" with requeue) adds 1
  to x-delivery-count and moves the message to the BACK of the queue. With a
  delivery limit (x-delivery-limit argument or policy; RabbitMQ 4 sets 20 by
  default) a few such peeks dead-letter or drop the message. dlq therefore
  never returns quorum deliveries by default: it rotates (as above), so
  counts never rise. --mode hold or requeue on a quorum queue with a
  delivery limit is refused; without a limit it is allowed with --force and
  reported ("20 messages moved to the back, delivery count +1").

RabbitMQ streams (default --mode stream)
  Streams are read, not consumed: dlq attaches a consumer at an offset
  (--offset first|last|next|N or an RFC 3339 time, --since 2h) with
  basic.qos as streams require (they reject basic.get). Nothing changes;
  the same peek gives the same messages every time.

Amazon SQS standard and FIFO queues (default --mode receive)
  SQS has no peek. dlq receives messages and makes each visible again at
  once (ChangeMessageVisibility 0), so they are not hidden for the queue's
  visibility timeout. Each receive adds 1 to ApproximateReceiveCount. If the
  DLQ itself has a RedrivePolicy (a DLQ of a DLQ), a peek could push a
  message over its maxReceiveCount and move it on; dlq refuses when the
  receive count of a message could reach it, and --force does not override
  a peek that would move a message. On FIFO queues a received message blocks
  its message group until it is visible again, which dlq does at once.
  SQS returns messages in no guaranteed order and may return fewer than
  asked for; dlq keeps receiving until --limit or the queue is exhausted.

Archives (file://… and demo:)
  Read from start to end (--offset N starts at line N). Nothing changes.

Reading a whole queue (stats, export, redrive --dry-run) uses the modes
above: streams and archives are read; classic and quorum queues are rotated
so that at most a window of messages is ever unacknowledged; SQS queues are
received in batches and made visible again.`

func newHelpPeekSafety() *cobra.Command {
	return &cobra.Command{
		Use:   "peek-safety",
		Short: "What peek, stats and export do to each kind of queue",
		Long:  peekSafetyHelp,
	}
}
