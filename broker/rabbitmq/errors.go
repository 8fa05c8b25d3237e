package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"sync"
	"syscall"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
)

// translateErr turns an amqp091 or network error into a *broker.Error whose
// Kind is one of the broker error values, whose Op is op ("declare queue
// `orders`") and whose text names the fix. It is idempotent: a *broker.Error
// is returned unchanged, and context errors stay detectable with errors.Is.
// AMQP reply codes map as follows:
//
//	404 NOT_FOUND            ErrNotFound
//	406 PRECONDITION_FAILED  ErrConflict (inequivalent arguments, unknown delivery tag…)
//	405 RESOURCE_LOCKED      ErrConflict (exclusive queue of another connection)
//	403 ACCESS_REFUSED       ErrAccessDenied
//	530 NOT_ALLOWED          ErrNotFound when something is missing, else ErrAccessDenied
//	320 CONNECTION_FORCED    ErrUnreachable (closed by an operator or a node stopping)
//	504 channel closed       ErrUnreachable
//	540 NOT_IMPLEMENTED      ErrUnsupported (basic.get on a stream…)
//	506 RESOURCE_ERROR       ErrBlocked
//	311 CONTENT_TOO_LARGE    ErrUnsupported
//	312 NO_ROUTE             ErrUnroutable
func translateErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*broker.Error](err); ok {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if op == "" {
			return err
		}
		return fmt.Errorf("%s: %w", op, err)
	}
	var ae *amqp.Error
	if errors.As(err, &ae) {
		return translateAMQP(op, ae)
	}
	if isConnLoss(err) {
		return &broker.Error{Kind: broker.ErrUnreachable, Op: op, Err: err,
			Msg: "the connection to the broker was lost (" + connLossText(err) + "): re-run the command; unsettled messages went back to their queues"}
	}
	if op == "" {
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}

var (
	reNoObject = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`no (queue|exchange) '(.*)' in vhost '(.*)'`) })
)

// refusedFrame reports whether the client closed the connection because it
// could not parse what the broker sent (amqp091-go's ErrSyntax, ErrFrame,
// ErrFrameTooLarge, whose text its reader puts in the Reason), rather than
// because reading or writing failed: both arrive as a FrameError.
func refusedFrame(ae *amqp.Error) bool {
	if ae.Code == amqp.SyntaxError {
		return true
	}
	for _, e := range []*amqp.Error{amqp.ErrSyntax, amqp.ErrFrame, amqp.ErrFrameTooLarge} {
		if ae.Reason == e.Error() || ae.Reason == e.Reason {
			return true
		}
	}
	return false
}

func translateAMQP(op string, ae *amqp.Error) error {
	reason := cleanReason(ae.Reason)
	e := &broker.Error{Op: op, Err: ae}
	if !ae.Server && ae.Code == amqp.FrameError && !refusedFrame(ae) {
		// The client's reader or writer failed on the connection itself
		// (EOF, a reset, a broken pipe): a node that died, a network cut.
		return &broker.Error{Kind: broker.ErrUnreachable, Op: op, Err: ae,
			Msg: "the connection to the broker was lost (" + reason + "): re-run the command; unsettled messages went back to their queues"}
	}
	if !ae.Server && (ae.Code == amqp.FrameError || ae.Code == amqp.SyntaxError) {
		// The client refused a frame the broker sent: a message whose
		// headers amqp091-go will not read (tables nested deeper than 32,
		// or a table or array of more than 8,192 entries; RabbitMQ takes
		// both), or a corrupt frame. Its reader closes the connection.
		e.Kind, e.Err = broker.ErrUnsupported, &unreadableFrame{err: ae}
		e.Msg = "dlq's AMQP client could not read what the broker sent (" + reason + "), most likely a message whose headers nest tables deeper than 32 levels or hold more than 8,192 entries, and closed the connection: every message dlq held went back to its queue"
		return e
	}
	switch ae.Code {
	case amqp.NotFound:
		e.Kind = broker.ErrNotFound
		if m := reNoObject().FindStringSubmatch(reason); m != nil {
			if m[1] == "queue" {
				e.Hint = broker.Hintf("queue `%s` not found on vhost `%s`: check the queue name, or list queues with %s", m[2], m[3], broker.Cmd("queues"))
			} else {
				e.Hint = broker.Hintf("exchange `%s` not found on vhost `%s`: check the exchange name, or declare it with %s", m[2], m[3], broker.Cmd("topology apply"))
			}
		} else {
			e.Msg = reason
		}
	case amqp.PreconditionFailed:
		e.Kind = broker.ErrConflict
		switch {
		case strings.Contains(reason, "inequivalent arg"):
			e.Msg = reason + ": the existing object was declared with other arguments; match them, or delete and re-declare it"
		case strings.Contains(reason, "unknown delivery tag"):
			e.Msg = reason + ": the delivery was already settled, or its channel closed and returned it to the queue"
		default:
			e.Msg = reason
		}
	case amqp.ResourceLocked:
		e.Kind = broker.ErrConflict
		e.Msg = reason + ": the queue is exclusive to another connection"
	case amqp.AccessRefused:
		e.Kind = broker.ErrAccessDenied
		e.Msg = reason + ": grant the user permissions on the vhost (`rabbitmqctl set_permissions`) or use another user"
	case amqp.NotAllowed:
		if strings.Contains(reason, "not found") {
			e.Kind = broker.ErrNotFound
		} else {
			e.Kind = broker.ErrAccessDenied
		}
		e.Msg = reason
	case amqp.ConnectionForced:
		e.Kind = broker.ErrUnreachable
		e.Msg = "the broker closed the connection (" + reason + "): an operator closed it or the node is stopping; re-run the command; unsettled messages went back to their queues"
	case amqp.ChannelError:
		e.Kind = broker.ErrUnreachable
		e.Msg = "the channel or connection to the broker is closed (" + reason + "): re-run the command; unsettled messages went back to their queues"
	case amqp.NotImplemented:
		e.Kind = broker.ErrUnsupported
		e.Msg = reason
	case amqp.ResourceError:
		e.Kind = broker.ErrBlocked
		e.Msg = reason + ": the broker is out of a resource (memory, disk, channels); ask its operator"
	case amqp.ContentTooLarge:
		e.Kind = broker.ErrUnsupported
		e.Msg = reason + ": the message is larger than the broker accepts (`max_message_size`)"
	case amqp.NoRoute:
		e.Kind = broker.ErrUnroutable
		e.Msg = reason + ": no queue is bound for this routing key"
	case amqp.InvalidPath:
		e.Kind = broker.ErrNotFound
		e.Msg, e.Hint = reason, broker.Hintf("check the vhost in %s", broker.OptBroker)
	default:
		// Framing, syntax and internal errors: nothing the user can fix but
		// retrying; keep the broker's words.
		e.Kind = broker.ErrUnreachable
		e.Msg = fmt.Sprintf("the broker reported error %d (%s): re-run the command", ae.Code, reason)
	}
	return e
}

// unreadableFrame is a frame the client refused to read (translateAMQP), or
// (held) a delivery whose headers the frame guard replaced because the
// client would refuse them: then the connection stays, and whoever stopped
// at it returned what it held with an explicit nack.
type unreadableFrame struct {
	err  *amqp.Error
	held bool
	// n is how many deliveries the read held and gave back (0: unknown).
	n int64
}

// unreadableDelivery is the error of a consumer of queue that stopped at a
// delivery the frame guard marked (see guardFrames), why its reason.
func unreadableDelivery(queue, op, why string) error { return unreadableHeld(queue, op, why, 0) }

// unreadableHeld is unreadableDelivery of a read that held n deliveries.
func unreadableHeld(queue, op, why string, n int64) error {
	return &broker.Error{Kind: broker.ErrUnsupported, Op: op,
		Err: &unreadableFrame{err: &amqp.Error{Code: amqp.SyntaxError, Reason: why}, held: true, n: n},
		Msg: "dlq's AMQP client cannot read the headers of a message (" + why + "): dlq stopped at it, and every message it held and had not settled went back to its queue, explicitly, the connection kept",
		Hint: broker.Hintf("%s names its position N; take it out with %s (archived first) or %s, or let the broker move the queue with %s; then run this again",
			broker.Cmd("peek "+queue), broker.Cmd("discard "+queue+" --position N --archive-to file://PATH.jsonl"), broker.Cmd("redrive "+queue+" --position N --to queue:NAME"), broker.OptServerSide)}
}

func (u *unreadableFrame) Error() string { return u.err.Error() }
func (u *unreadableFrame) Unwrap() error { return u.err }

// cleanReason drops the "NOT_FOUND - " style prefix RabbitMQ puts before its
// explanation.
func cleanReason(r string) string {
	if i := strings.Index(r, " - "); i > 0 && strings.ToUpper(r[:i]) == r[:i] && !strings.Contains(r[:i], " ") {
		r = r[i+3:]
	}
	if r == "" {
		return "no reason given"
	}
	return r
}

func isConnLoss(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

func connLossText(err error) string {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "closed by the peer"
	case errors.Is(err, syscall.ECONNRESET):
		return "reset by the peer"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timed out"
	}
	return "network error"
}

// notFoundQueue is the error for a queue that does not exist.
func (b *Broker) notFoundQueue(op, name string) error {
	return &broker.Error{Kind: broker.ErrNotFound, Op: op,
		Hint: broker.Hintf("queue `%s` not found on vhost `%s`: check the queue name, or list queues with %s", name, b.vhost, broker.Cmd("queues"))}
}
