package rabbitmq

import (
	"errors"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
)

// amqp091-go closes a connection with a FrameError both when its reader
// cannot parse a frame (a message with headers it refuses) and when the
// connection itself fails (EOF when a node dies): only the first is an
// unreadable message.
func TestFrameErrorsAreToldApart(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        *amqp.Error
		kind       error
		unreadable bool
	}{
		{"table too deep", &amqp.Error{Code: amqp.FrameError, Reason: amqp.ErrSyntax.Error()}, broker.ErrUnsupported, true},
		{"frame not parsed", &amqp.Error{Code: amqp.FrameError, Reason: amqp.ErrFrame.Error()}, broker.ErrUnsupported, true},
		{"syntax", amqp.ErrSyntax, broker.ErrUnsupported, true},
		{"node died", &amqp.Error{Code: amqp.FrameError, Reason: "EOF"}, broker.ErrUnreachable, false},
		{"reset", &amqp.Error{Code: amqp.FrameError, Reason: "read tcp 127.0.0.1:5672: read: connection reset by peer"}, broker.ErrUnreachable, false},
		{"broken pipe", &amqp.Error{Code: amqp.FrameError, Reason: "write tcp 127.0.0.1:5672: write: broken pipe"}, broker.ErrUnreachable, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := translateErr("consume queue `q`", tc.err)
			be, ok := errors.AsType[*broker.Error](err)
			if !ok || be.Kind != tc.kind {
				t.Fatalf("%v: kind %v, want %v", err, be, tc.kind)
			}
			var uf *unreadableFrame
			if got := errors.As(err, &uf); got != tc.unreadable {
				t.Errorf("%v: unreadable %v, want %v", err, got, tc.unreadable)
			}
			if said := strings.Contains(err.Error(), "headers nest tables"); said != tc.unreadable {
				t.Errorf("the error blames a message's headers: %v, want %v: %v", said, tc.unreadable, err)
			}
		})
	}
}
