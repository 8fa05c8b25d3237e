package topology

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

// failingApplier is a RabbitMQ broker whose every change fails with err.
type failingApplier struct{ err error }

func (failingApplier) System() broker.System { return broker.RabbitMQ }
func (failingApplier) String() string        { return "fake" }
func (failingApplier) Close() error          { return nil }
func (f failingApplier) ApplyRabbitChange(context.Context, broker.RabbitChange) error {
	return f.err
}

// A failed change is named once: by the adapter when it marks its error
// as naming the object, else by Apply. The words of the error decide
// nothing.
func TestApplyNamesTheFailedObjectOnce(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"marked by the adapter", broker.Naming("orders", errors.New("declare queue `orders`: refused")), "declare queue `orders`: refused"},
		{"unmarked", errors.New("refused"), "create queue `orders`: refused"},
		{"unmarked, though its words name it", errors.New("`orders` refused"), "create queue `orders`: `orders` refused"},
		{"marked for another object", broker.Naming("other", errors.New("refused")), "create queue `orders`: refused"},
	}
	for _, tt := range tests {
		p := &Plan{System: broker.RabbitMQ, Changes: []Change{{Action: Create, System: broker.RabbitMQ, Kind: "queue", Name: "orders",
			do: &broker.RabbitChange{Action: broker.Declare, Queue: &broker.QueueDecl{Name: "orders"}}}}}
		res, err := Apply(context.Background(), failingApplier{tt.err}, p, nil)
		if err == nil || err.Error() != tt.want || res.Failed == nil {
			t.Errorf("%s: %v (failed change recorded: %v), want %q", tt.name, err, res.Failed != nil, tt.want)
		}
	}
}

// A refused plan proposes `dlq topology plan` as a typed command, which a
// front end words its own way; plainly the text is unchanged.
func TestConflictErrorProposesPlan(t *testing.T) {
	err := error(&ConflictError{Conflicts: []Change{{Kind: "queue", Name: "orders"}}})
	plain := "1 conflict(s) (queue `orders`): nothing was applied, the broker is unchanged; resolve them as `dlq topology plan` explains"
	if err.Error() != plain {
		t.Errorf("plain:\n got %q\nwant %q", err.Error(), plain)
	}
	tui := func(s broker.Setting) string {
		if s.Option == broker.OptCommand {
			return "the plan screen"
		}
		return ""
	}
	if got, want := broker.RenderError(err, tui), strings.Replace(plain, "`dlq topology plan`", "the plan screen", 1); got != want {
		t.Errorf("worded:\n got %q\nwant %q", got, want)
	}
	if !errors.Is(err, broker.ErrConflict) || !IsConflict(err) {
		t.Error("a refused plan is no longer a conflict")
	}
}
