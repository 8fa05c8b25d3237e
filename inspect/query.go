package inspect

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/itchyny/gojq"

	"github.com/dlq-tools/dlq/broker"
)

// MaxOutputs bounds how many values Eval collects from one evaluation, so
// that a generator such as `range(1e9)` cannot exhaust memory.
const MaxOutputs = 10000

// DefaultEvalTimeout bounds one evaluation when ctx carries no deadline.
const DefaultEvalTimeout = 5 * time.Second

// Query is a compiled jq expression (gojq) over message documents. It has
// no access to the environment ($ENV and env are empty) or to other inputs
// (input and inputs fail), so a filter sees exactly one message.
type Query struct {
	src   string
	code  *gojq.Code
	watch *pathWatch
}

// Compile parses and compiles a jq expression. Its error is one line naming
// the position and offending token, with a hint.
func Compile(expr string) (*Query, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, errors.New("empty jq expression: write one such as '.reason == \"rejected\"'")
	}
	q, err := gojq.Parse(expr)
	if err != nil {
		return nil, parseError(expr, err)
	}
	code, err := gojq.Compile(q, gojq.WithEnvironLoader(func() []string { return nil }))
	if err != nil {
		return nil, compileError(err)
	}
	return &Query{src: expr, code: code, watch: newPathWatch(docPaths(q))}, nil
}

// MustCompile is Compile for expressions known to be valid; it panics on an
// invalid one.
func MustCompile(expr string) *Query {
	q, err := Compile(expr)
	if err != nil {
		panic(err)
	}
	return q
}

// String returns the expression as written.
func (q *Query) String() string { return q.src }

func parseError(expr string, err error) error {
	var pe *gojq.ParseError
	if !errors.As(err, &pe) {
		return fmt.Errorf("invalid jq expression: %s", oneLine(err.Error(), 200))
	}
	start := pe.Offset - len(pe.Token)
	if start < 0 {
		start = 0
	}
	if start > len(expr) {
		start = len(expr)
	}
	col := len([]rune(expr[:start])) + 1
	msg := oneLine(pe.Error(), 80)
	hint := "check the jq syntax near that position"
	switch {
	case pe.Token == "" || strings.HasPrefix(msg, "unexpected EOF"):
		msg = "unexpected end of expression"
		hint = "an opening bracket, parenthesis or string is not closed, or an operator has nothing after it"
	case strings.HasPrefix(msg, "unterminated string"):
		hint = `close the string with a double quote; quote the whole expression for the shell in single quotes`
	case pe.Token == "'":
		hint = `jq strings use double quotes: .reason == "rejected"`
	case pe.Token == "=":
		hint = "compare with == (a single = assigns)"
	case strings.HasPrefix(msg, "invalid escape"):
		hint = `inside a jq string escape only \" \\ \/ \b \f \n \r \t \uXXXX and \(…)`
	}
	return fmt.Errorf("invalid jq expression at column %d: %s in %s; %s", col, msg, excerpt(expr, start), hint)
}

// excerpt quotes the expression around byte offset at, marking the spot.
func excerpt(expr string, at int) string {
	const span = 30
	lo, hi := max(at-span, 0), min(at+span, len(expr))
	for lo > 0 && lo < len(expr) && !isRuneStart(expr[lo]) {
		lo--
	}
	for hi < len(expr) && !isRuneStart(expr[hi]) {
		hi++
	}
	pre, post := expr[lo:at], expr[at:hi]
	if lo > 0 {
		pre = "…" + pre
	}
	if hi < len(expr) {
		post += "…"
	}
	return "`" + oneLine(pre, 0) + "⟶" + oneLine(post, 0) + "`"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func compileError(err error) error {
	msg := oneLine(err.Error(), 200)
	hint := "see the jq manual for the available functions"
	switch {
	case strings.Contains(msg, "variable not defined"):
		hint = "no variables are predefined; bind one with `… as $x | …`"
	case strings.Contains(msg, "input(s)") || strings.Contains(msg, "function not defined: input"):
		hint = "filters see one message only: env, input and inputs are not available"
	case strings.Contains(msg, "function not defined"):
		hint = "check the function name and its number of arguments (name/arity)"
	}
	return fmt.Errorf("invalid jq expression: %s; %s", msg, hint)
}

// run evaluates q over doc, calling fn for each output until fn returns
// false. Evaluation stops when ctx ends (or after DefaultEvalTimeout when
// ctx has no deadline).
func (q *Query) run(ctx context.Context, doc any, fn func(any) bool) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultEvalTimeout)
		defer cancel()
	}
	return q.each(ctx, doc, fn)
}

func (q *Query) each(ctx context.Context, doc any, fn func(any) bool) error {
	iter := q.code.RunWithContext(ctx, doc)
	for {
		v, ok := iter.Next()
		if !ok {
			return nil
		}
		if err, isErr := v.(error); isErr {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				if ctx.Err() != nil {
					return fmt.Errorf("jq `%s`: evaluation stopped: %w", oneLine(q.src, 60), ctx.Err())
				}
			}
			var he *gojq.HaltError
			if errors.As(err, &he) && he.Value() == nil {
				return nil // halt: end without error
			}
			return fmt.Errorf("jq `%s`: %s", oneLine(q.src, 60), oneLine(err.Error(), 200))
		}
		if !fn(v) {
			return nil
		}
	}
}

// Each evaluates q over any JSON value (maps, slices, strings, bool,
// json.Number, float64, nil), calling fn for each output until fn returns
// false. Unlike Eval it collects nothing and sets no time limit of its
// own: it stops when ctx ends.
func (q *Query) Each(ctx context.Context, doc any, fn func(any) bool) error {
	return q.each(ctx, doc, fn)
}

// Eval evaluates q over doc and returns its outputs (at most MaxOutputs).
func (q *Query) Eval(ctx context.Context, doc any) ([]any, error) {
	var out []any
	var tooMany bool
	err := q.run(ctx, doc, func(v any) bool {
		if len(out) == MaxOutputs {
			tooMany = true
			return false
		}
		out = append(out, v)
		return true
	})
	if err != nil {
		return nil, err
	}
	if tooMany {
		return nil, fmt.Errorf("jq `%s`: more than %d outputs for one message", oneLine(q.src, 60), MaxOutputs)
	}
	return out, nil
}

// First returns q's first output over doc; ok is false when there is none.
func (q *Query) First(ctx context.Context, doc any) (v any, ok bool, err error) {
	err = q.run(ctx, doc, func(x any) bool {
		v, ok = x, true
		return false
	})
	return v, ok, err
}

// MatchDoc reports whether q's first output over doc is truthy (neither
// false nor null). No output is no match.
func (q *Query) MatchDoc(ctx context.Context, doc any) (bool, error) {
	q.watch.observe(doc)
	v, ok, err := q.First(ctx, doc)
	if err != nil || !ok {
		return false, err
	}
	return Truthy(v), nil
}

// Match evaluates q over m's Document.
func (q *Query) Match(ctx context.Context, m *broker.Message) (bool, error) {
	return q.MatchDoc(ctx, Document(m))
}

// Truthy is jq's truth: everything but false and null.
func Truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	default:
		return true
	}
}

// valueText renders a jq value as text: strings as they are, others as
// compact JSON.
func valueText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := gojq.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// ValueText renders a jq output as text: strings as they are, other values
// as compact JSON, null as "".
func ValueText(v any) string {
	if v == nil {
		return ""
	}
	return valueText(v)
}
