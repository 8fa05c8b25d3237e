package redrive

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// dryRun reads the source with its Peeker (under the peek-safety rules, so
// nothing is taken, reordered, or pushed towards a delivery limit) and
// reports what a run would do: counts per destination, what would be
// skipped and why, and diffs of the first transformed messages.
func (e *engine) dryRun(ctx context.Context) (Summary, error) {
	p, ok := e.src.(broker.Peeker)
	if !ok {
		return e.tally.sum, broker.Errorf(broker.ErrUnsupported, "dry run", "%s cannot be read without taking messages", e.src)
	}
	e.start = e.now()
	rc, _ := e.dst.(broker.RouteChecker)
	routable := map[string]error{}
	var routeErr map[string]bool = map[string]bool{}
	po := broker.PeekOptions{}
	if e.opts.Limit > 0 && !e.sel.selective() {
		po.Limit = int(e.opts.Limit)
	}
	if e.traits.PeekAll != broker.PeekAuto && po.Limit == 0 {
		// A whole queue is read in the mode its traits give (RabbitMQ
		// classic and quorum: rotation, so at most a window is
		// unacknowledged and no delivery count goes up); a stream as one.
		po.Mode = e.traits.PeekAll
		if qi, ok := e.src.(broker.QueueInspector); ok {
			if q, err := qi.Queue(ctx, e.queue); err == nil && q.Kind == broker.KindStream {
				po.Mode = broker.PeekStream
			}
		}
	}
	rep, err := p.Peek(ctx, e.queue, po, func(m *broker.Message) error {
		if m.ID == "" {
			m.ID = broker.Fingerprint(m)
		}
		e.tally.sum.Examined++
		if e.opts.Resume != nil && e.opts.Resume.takeConfirmed(m.ID) {
			e.tally.sum.dest("(moved by the interrupted run)", 1)
			return nil
		}
		if reason := e.sel.reason(ctx, m); reason != "" {
			e.tally.skip(reason, m.ID, nil)
			return nil
		}
		if e.mode == modeDiscard {
			e.tally.sum.dest(e.tally.sum.Destination, 1)
			e.selected.Add(1)
			e.sampleID(m.ID)
			return e.stopAtLimit()
		}
		out, dest, reason, err := e.prepare(ctx, m)
		if reason != "" {
			e.tally.skip(reason, m.ID, err)
			return nil
		}
		if rc != nil {
			rerr, seen := routable[dest]
			if !seen {
				ok, err := rc.Routable(ctx, out.Dest)
				switch {
				case err != nil:
					routeErr[dest] = true
					rerr = nil
				case !ok:
					rerr = fmt.Errorf("no queue is bound to %s", dest)
				}
				routable[dest] = rerr
			}
			if rerr != nil {
				e.tally.skip(ReasonUnroutable, m.ID, rerr)
				return nil
			}
		}
		e.tally.sum.dest(dest, 1)
		e.selected.Add(1)
		e.sampleID(m.ID)
		if (e.opts.Transform != nil || len(e.opts.SetHeaders) > 0) && len(e.tally.sum.Diffs) < e.opts.DiffLimit {
			e.tally.sum.Diffs = append(e.tally.sum.Diffs, makeDiff(m, out.Message))
		}
		return e.stopAtLimit()
	})
	if rep.Changed != "" {
		e.tally.notice("the dry run's read changed the queue: " + rep.Changed)
	}
	for d := range routeErr {
		e.tally.notice(fmt.Sprintf("could not check the bindings of %s", d))
	}
	e.tally.sum.Elapsed = e.now().Sub(e.start)
	if err != nil && !errors.Is(err, broker.ErrStop) {
		return e.tally.sum, fmt.Errorf("dry run: read `%s`: %w", e.queue, err)
	}
	return e.tally.sum, nil
}

// sampleID records the ID of a message a dry run would move (at most
// MaxIDs), so that a preview can name some.
func (e *engine) sampleID(id string) {
	if len(e.tally.sum.IDs) < e.opts.MaxIDs {
		e.tally.sum.IDs = append(e.tally.sum.IDs, id)
	} else {
		e.tally.sum.IDsTruncated = true
	}
}

func (e *engine) stopAtLimit() error {
	if e.limitReached() {
		return broker.ErrStop
	}
	return nil
}

// makeDiff renders a message before and after as JSON documents and a line
// diff between them.
func makeDiff(before, after *broker.Message) Diff {
	b, a := render(View(before)), render(View(after))
	return Diff{ID: before.ID, Before: b, After: a, Lines: LineDiff(b, a)}
}

func render(v any) string {
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(jsonable(v)); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimRight(sb.String(), "\n")
}

// View is the part of a message a redrive publishes: body (parsed when it
// is JSON, text when UTF-8, else base64), headers, properties, attributes.
func View(m *broker.Message) map[string]any {
	v := map[string]any{}
	var body any
	if err := json.Unmarshal(m.Body, &body); err != nil || len(m.Body) == 0 {
		if isText(m.Body) {
			body = string(m.Body)
		} else {
			body = map[string]any{"base64": base64.StdEncoding.EncodeToString(m.Body)}
		}
	}
	v["body"] = body
	if len(m.Headers) > 0 {
		h := map[string]any{}
		for k, x := range m.Headers {
			h[k] = viewValue(x)
		}
		v["headers"] = h
	}
	var props map[string]any
	if b, err := json.Marshal(m.Properties); err == nil {
		_ = json.Unmarshal(b, &props)
	}
	if len(props) > 0 {
		v["properties"] = props
	}
	if len(m.Attributes) > 0 {
		v["attributes"] = m.Attributes
	}
	return v
}

func viewValue(x any) any {
	switch t := x.(type) {
	case map[string]any:
		o := map[string]any{}
		for k, e := range t {
			o[k] = viewValue(e)
		}
		return o
	case []any:
		o := make([]any, len(t))
		for i, e := range t {
			o[i] = viewValue(e)
		}
		return o
	case []byte:
		if isText(t) {
			return string(t)
		}
		return base64.StdEncoding.EncodeToString(t)
	case time.Time:
		return t.UTC().Format(time.RFC3339Nano)
	case fmt.Stringer:
		return t.String()
	default:
		return x
	}
}

func isText(b []byte) bool {
	for _, r := range string(b) {
		if r == 0xFFFD || (r < 0x20 && r != '\n' && r != '\r' && r != '\t') {
			return false
		}
	}
	return true
}

// LineDiff is a minimal unified-style diff of two texts: unchanged lines
// start with two spaces, removed ones with "- ", added ones with "+ ".
func LineDiff(a, b string) string {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	n, m := len(x), len(y)
	if n*m > 4_000_000 {
		return "- " + strings.Join(x, "\n- ") + "\n+ " + strings.Join(y, "\n+ ")
	}
	// Longest common subsequence table, from the end.
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var sb strings.Builder
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			sb.WriteString("  " + x[i] + "\n")
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			sb.WriteString("+ " + y[j] + "\n")
			j++
		default:
			sb.WriteString("- " + x[i] + "\n")
			i++
		}
	}
	return strings.TrimRight(sb.String(), "\n")
}
