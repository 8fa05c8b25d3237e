// Package rabbitmq is dlq's RabbitMQ adapter. It speaks AMQP 0-9-1 (through
// amqp091-go) for messages and the management HTTP API (through net/http) for
// queue statistics, policies and bindings, and translates both into the
// neutral types and error values of package broker.
//
// One Broker holds one AMQP connection. Every operation that could fail with
// a channel exception (a passive declare of a missing queue, a 406 on
// inequivalent arguments) runs on a fresh channel of its own (withChannel),
// so a 404 or 406 never kills the connection the rest of the command uses.
// Subscriptions and publishers hold dedicated channels for their lifetime.
//
// No error, log line or String() of this package contains the password: URLs
// are printed without it and errors of the URL parser (which quote the whole
// URL) are never passed on.
//
// # TLS and logins
//
// amqps:// dials TLS; amqp:// never does. A CA file is added to the
// system's roots rather than replacing them. The AMQP login is PLAIN (user
// and password) or EXTERNAL (Config.Auth: the client certificate, no
// password; the user is the certificate's CN). The management API has no
// certificate login: it takes basic auth from Config.ManagementUser and
// ManagementPassword, else from a PLAIN login, and with neither it is not
// called at all (the error names the settings). It has TLS files of its
// own, defaulting to the AMQP ones. A failed TLS handshake, a client
// certificate the server wants, an http:// URL of an HTTPS port (and the
// reverse), and an amqp:// URL of an AMQPS port (found by a TLS probe after
// the AMQP handshake failed) each get an error that names the setting to
// change.
//
// # Peek safety
//
// A peek reads messages without taking them away. What is safe depends on
// the queue kind, so Peek chooses per kind (PeekAuto) and refuses, with
// ErrUnsafe and the safe alternative, what could harm a message.
//
// Classic queues — hold (the default). dlq sets basic.qos to the number of
// messages it will read, consumes them without acknowledging, and then closes
// the channel: the broker returns every held message to its original
// position, so the order of the queue is unchanged (tested). The only trace is
// the redelivered flag on those messages, which the report states ("20
// messages now carry the redelivered flag"). The number held unacknowledged at
// once is bounded by MaxUnacked (default 5000; a client holding hundreds of
// thousands of unacked messages has taken brokers down): a Limit above it, or
// reading all (Limit 0) of a deeper queue, is refused with ErrUnsafe naming
// rotate mode. Time to the first message does not depend on the depth.
//
// Quorum queues — rotate (the default). Every return of a quorum message
// (nack with requeue, a closed channel, the management UI's "get messages")
// raises its x-delivery-count and moves it to the BACK of the queue; with a
// delivery limit (x-delivery-limit argument or delivery-limit policy) a few
// peeks dead-letter it away. Rotation never returns a message: each message
// is republished to the same queue (default exchange, routing key = the queue)
// with all its properties and headers except x-delivery-count, with publisher
// confirms, and the original is acknowledged only after its copy is
// confirmed. It goes a window at a time (rotateWindow; limitedRotateWindow
// on a quorum queue with a delivery limit): every delivery of a window is
// received before any copy of it is published, and the window's originals
// are acked once all its copies are confirmed, before the next window is
// delivered. A message the client cannot read (see guardFrames) ends the
// rotation while its window is received, so no copy of that window exists,
// and every message is in the queue once; the deliveries held (at most a
// window) are returned with an explicit nack, on a quorum queue below
// RabbitMQ 4.3 with their x-delivery-count +1 (see unreadable.go for how
// such a message is then shown). Rotation stops after
// the number of messages the queue held when it started, so the queue ends in its original order (messages published
// meanwhile by others end up between them). A crash mid-way may leave a
// message twice (copy confirmed, original not yet acked), never lose one.
// What changes: redelivered flags and x-delivery-counts are reset, the
// delivery's exchange and routing key become "" and the queue name (the
// x-death record keeps where the message came from), and per-message TTLs
// start again.
//
// Stopping early in rotate mode (a Limit below the depth, or visit returning
// ErrStop) would leave the visited messages at the back. dlq keeps the order
// instead: it visits Limit messages and rotates the rest of the snapshot
// without visiting them. So that a peek of 20 messages does not silently turn
// into rotating a million, a Limit that leaves more than RotateTailMax
// messages to rotate unvisited is refused with ErrUnsafe unless Force is set;
// with Force only the visited messages are rotated, and the report says that
// they moved to the back. When the walk is cancelled (ctx), the messages
// already taken are still republished and confirmed before their originals
// are acked, and the report says the order changed.
//
// Hold and requeue on quorum queues: allowed when the queue has no delivery
// limit; the report says what changed. Measured on RabbitMQ 3.10 and 4.0:
// both raise x-delivery-count by one; messages returned by closing the
// channel (hold) keep their place, messages returned by nack-requeue
// (requeue) move to the back; other versions may move both to the back.
// On 4.x a quorum queue without a delivery limit has one of 20 (RabbitMQ's
// default; a negative limit turns it off), so there hold and requeue need
// Force too. A limit of 0 (or, on 3.x, a negative one) removes a message at
// its first return.
// With a delivery limit they are refused with ErrUnsafe unless Force; with
// Force, a message whose x-delivery-count is not at least 2 below the limit
// is rotated (republished and confirmed, then acked) instead of being
// returned, so no peek ever pushes a message over its limit.
//
// Quorum queues on RabbitMQ 4.3 and later — hold (the default). There a
// quorum queue's delivery limit counts only failed deliveries: a nack with
// requeue raises x-acquired-count (every delivery) but not
// x-delivery-count, while a closed channel still counts. The server's
// version comes from the AMQP connection's server properties
// (requeueCounts). Peek reads these queues in hold mode and returns every
// delivery by one explicit basic.nack with requeue (returnAll), never by
// closing the channel: nothing is republished, no x-delivery-count rises,
// nothing is dead-lettered or dropped, whatever the delivery limit, with no
// Force and without write permission. Measured on 4.3.6 (hold and requeue
// mode): every message keeps its position, exchange and routing key; the
// redelivered flag is set and x-acquired-count goes up by 1. A read larger
// than the hold bound (MaxUnacked) rotates, as on other versions.
//
// Streams — read from an offset (Offset: first (default), last, next, an
// offset number, an RFC 3339 time, or a duration such as 2h meaning that long
// ago). Streams need basic.qos and reject basic.get (which closes the whole
// connection), so dlq consumes with x-stream-offset and acknowledges as it
// goes (on a stream an ack only grants credit). The walk ends at Limit or at
// the end of the stream, computed from the stream's message count and first
// offset, with an idle timeout as a fallback. Nothing changes.
//
// Classic queues can also be rotated (rotate mode), which reads a queue of
// any depth with a bounded window and keeps its order. Requeue mode holds like
// hold mode and then returns the messages with explicit nack-requeue once the
// consumer is cancelled (returning each at once would get it delivered again
// immediately, on classic and quorum queues alike); its effects are those of
// hold mode.
package rabbitmq
