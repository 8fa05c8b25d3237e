package broker

import (
	"fmt"
	"runtime/debug"
)

// PanicError is a panic recovered while a library computed over one
// message's values (a statistic, a filter, a transform): the read or the
// move it stopped reports it as an error, so that the caller still settles
// what it holds instead of the program dying mid-rotation.
type PanicError struct {
	ID    string // the message's ID
	Value any    // what was passed to panic
	Stack []byte // the goroutine's stack where it panicked
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("message %q: internal error (panic: %v)", e.ID, e.Value)
}

// Recover, deferred, turns a panic into a *PanicError in *err:
//
//	defer broker.Recover(m.ID, &err)
func Recover(id string, err *error) {
	if r := recover(); r != nil {
		*err = &PanicError{ID: id, Value: r, Stack: debug.Stack()}
	}
}
