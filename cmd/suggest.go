package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// suggestQueue adds "did you mean" to a not-found error when queue is
// indeed missing from b's queues (when b can list them), with the nearest
// names there. A not-found error about something else (an exchange, a
// message) on a queue that exists gets none.
func suggestQueue(ctx context.Context, b broker.Broker, queue string, err error) error {
	if err == nil || queue == "" || b == nil || !errors.Is(err, broker.ErrNotFound) {
		return err
	}
	ql, ok := b.(broker.QueueLister)
	if !ok {
		return err
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	qs, lerr := ql.Queues(lctx)
	if lerr != nil {
		return err
	}
	names := make([]string, len(qs))
	for i, q := range qs {
		if q.Name == queue {
			return err
		}
		names[i] = q.Name
	}
	near := broker.Nearest(queue, names, 3)
	if len(near) == 0 {
		return err
	}
	return &suggestedError{err: err, hint: "did you mean `" + strings.Join(near, "`, `") + "`?"}
}

// suggestedError is an error with a suggestion appended; errors.Is and As
// still see the original.
type suggestedError struct {
	err  error
	hint string
}

func (e *suggestedError) Error() string { return fmt.Sprintf("%v; %s", e.err, e.hint) }
func (e *suggestedError) Unwrap() error { return e.err }
