package broker

import (
	"errors"
	"fmt"
)

// Error values that adapters wrap their failures in. Test with errors.Is.
var (
	// ErrNotFound: a queue, exchange, vhost or message does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the broker refused because what exists differs from what
	// was asked (RabbitMQ 406 PRECONDITION_FAILED, SQS QueueAlreadyExists).
	ErrConflict = errors.New("conflict")
	// ErrAccessDenied: wrong credentials or missing permission (RabbitMQ 403,
	// SQS AccessDenied, expired AWS credentials).
	ErrAccessDenied = errors.New("access denied")
	// ErrUnreachable: the broker could not be reached (DNS, TCP, TLS).
	ErrUnreachable = errors.New("unreachable")
	// ErrBlocked: the broker is refusing publishes (RabbitMQ connection.blocked).
	ErrBlocked = errors.New("blocked by broker")
	// ErrUnsafe: the operation would harm messages (for example a peek that
	// could push a quorum message over its delivery limit); the wrapped text
	// explains why and names the safe alternative.
	ErrUnsafe = errors.New("refused as unsafe")
	// ErrUnsupported: the backend cannot do this for this queue kind.
	ErrUnsupported = errors.New("not supported")
	// ErrUnroutable: a mandatory publish was returned (no queue bound).
	ErrUnroutable = errors.New("unroutable")
	// ErrReadOnly: a mutation was attempted in read-only mode.
	ErrReadOnly = errors.New("read-only")
)

// ErrStop may be returned by a visit function to end a walk early without
// error.
var ErrStop = errors.New("stop")

// Error carries one of the values above with a human explanation and, where
// one exists, the fix. Its Error() is a single lowercase line.
type Error struct {
	Kind error  // one of the Err* values
	Op   string // what was being done: "declare queue `orders`"
	Msg  string // why, in words; may name the fix
	Hint *Hint  // the fix where it names settings; follows Msg
	Err  error  // the underlying cause, already free of secrets
}

func (e *Error) Error() string { return e.render(nil) }

func (e *Error) render(r Renderer) string {
	s := e.Op
	add := func(t string) {
		if s != "" {
			s += ": "
		}
		s += t
	}
	switch {
	case e.Msg != "" || e.Hint != nil:
		if e.Msg != "" {
			add(e.Msg)
		}
		if e.Hint != nil {
			add(e.Hint.Render(r))
		}
	case e.Err != nil:
		add(RenderError(e.Err, r))
	}
	if s == "" {
		s = e.Kind.Error()
	}
	return s
}

// Is reports whether target is the error kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error of the given kind with a formatted explanation;
// Option and Setting arguments are rendered late, as by Hintf.
func Errorf(kind error, op, format string, args ...any) error {
	for _, a := range args {
		switch a.(type) {
		case Option, Setting, Alternative, Command:
			return &Error{Kind: kind, Op: op, Hint: Hintf(format, args...)}
		}
	}
	return &Error{Kind: kind, Op: op, Msg: fmt.Sprintf(format, args...)}
}

// ContextError is an error about one named context of the front end's
// configuration (an environment variable its password_env names is not
// set). It says which, so that no caller adds the name a second time.
type ContextError struct {
	Context string
	Err     error
}

func (e *ContextError) Error() string { return "context `" + e.Context + "`: " + e.Err.Error() }
func (e *ContextError) Unwrap() error { return e.Err }

// NamedError is a failure about one named object (a queue, an exchange, a
// policy) whose words already name it: a caller that would say which
// object failed adds nothing. Adapters mark such errors with Naming.
type NamedError struct {
	Name string
	Err  error
}

func (e *NamedError) Error() string { return e.Err.Error() }
func (e *NamedError) Unwrap() error { return e.Err }

// Naming marks err as naming the object name; nil stays nil.
func Naming(name string, err error) error {
	if err == nil {
		return nil
	}
	return &NamedError{Name: name, Err: err}
}

// ErrorNames reports whether err, or an error it wraps, is marked as
// naming the object name.
func ErrorNames(err error, name string) bool {
	for err != nil {
		if ne, ok := err.(*NamedError); ok && ne.Name == name {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if ErrorNames(e, name) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}
