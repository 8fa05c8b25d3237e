package redrive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
	"github.com/dlq-tools/dlq/internal/textdiff"
)

// dryRun reads the source with its Peeker (under the peek-safety rules, so
// nothing is taken, reordered, or pushed towards a delivery limit) and
// reports what a run would do: counts per destination, what would be
// skipped and why, and diffs of the first transformed messages.
func (e *engine) dryRun(ctx context.Context) (Summary, error) {
	p, ok := e.src.(broker.Peeker)
	if e.opts.Read != nil {
		p, ok = e.opts.Read, true
	}
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
		// unacknowledged and no delivery count goes up, except a quorum
		// queue whose server does not count a requeue, which is held); a
		// stream as one.
		po.Mode = e.traits.PeekAll
		if qi, ok := e.src.(broker.QueueInspector); ok {
			if q, err := qi.Queue(ctx, e.queue); err == nil {
				po.Mode = broker.TraitsOf(e.src, q).PeekAll
			}
		}
	}
	rep, err := p.Peek(ctx, e.queue, po, func(m *broker.Message) (err error) {
		if m.ID == "" {
			m.ID = broker.Fingerprint(m)
		}
		// A panic over this message's values ends the peek with an error,
		// so the Peeker settles what it holds (a rotation completes).
		defer broker.Recover(m.ID, &err)
		e.tally.sum.Examined++
		if e.opts.Resume != nil && e.opts.Resume.takeConfirmed(m.ID) {
			e.tally.sum.dest("(moved by the interrupted run)", 1)
			return nil
		}
		if reason, err := e.sel.reason(ctx, m); reason != "" {
			e.tally.skip(reason, m.ID, err)
			return nil
		}
		if e.mode == modeDiscard {
			e.tally.sum.dest(e.tally.sum.Destination, 1)
			e.selected.Add(1)
			e.sampleID(m.ID)
			return e.stopAtLimit()
		}
		// What the real run could not move counts as failed here too,
		// so that a dry run ends as the real run would.
		out, dest, reason, err := e.prepare(ctx, m)
		if reason == ReasonInvalidTransform {
			e.addDiff(Diff{ID: m.ID, Before: render(View(m)), Error: err.Error()})
		}
		if reason != "" {
			e.tally.fail(reason, m.ID, err)
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
				e.tally.fail(ReasonUnroutable, m.ID, rerr)
				return nil
			}
		}
		e.tally.sum.dest(dest, 1)
		e.tally.sum.rule(dest, out.Dest.Via)
		e.selected.Add(1)
		e.sampleID(m.ID)
		if e.opts.Transform != nil || len(e.opts.SetHeaders) > 0 {
			e.addDiff(makeDiff(m, out.Message))
		}
		return e.stopAtLimit()
	})
	// Said once, at the end, where the front end says what the dry run
	// changed; never as a notice beside "nothing was changed".
	e.tally.sum.ReadChanged = rep.Changed
	e.tally.sum.OutOfReach = rep.OutOfReach
	for d := range routeErr {
		e.tally.notice(fmt.Sprintf("could not check the bindings of %s", d))
	}
	e.tally.sum.Elapsed = e.now().Sub(e.start)
	if err != nil && !errors.Is(err, broker.ErrStop) {
		return e.tally.sum, fmt.Errorf("dry run: read `%s`: %w", e.queue, err)
	}
	return e.tally.sum, e.sel.filterError()
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

// addDiff keeps d if fewer than DiffLimit diffs are kept, and counts it
// in DiffsMore otherwise.
func (e *engine) addDiff(d Diff) {
	if len(e.tally.sum.Diffs) < e.opts.DiffLimit {
		e.tally.sum.Diffs = append(e.tally.sum.Diffs, d)
	} else {
		e.tally.sum.DiffsMore++
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
	return Diff{ID: before.ID, Before: b, After: a, Lines: strings.Join(textdiff.Lines(b, a), "\n")}
}

func render(v any) string {
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimRight(sb.String(), "\n")
}

// View is the part of a message a redrive publishes as the message
// document shows it (inspect.Document): body, or body_base64 for a binary
// body, and headers, properties and attributes when they are not empty.
func View(m *broker.Message) map[string]any {
	doc := inspect.Document(m)
	v := map[string]any{"body": doc["body"]}
	if b, ok := doc["body_base64"]; ok {
		v["body_base64"] = b
	}
	for _, k := range []string{"headers", "properties", "attributes"} {
		if d, _ := doc[k].(map[string]any); len(d) > 0 {
			v[k] = d
		}
	}
	return v
}
