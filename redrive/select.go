package redrive

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
)

// selector is the select stage's choice: which messages a run takes (IDs,
// excluded IDs, age, filter, dedupe key).
type selector struct {
	ids, excluded map[string]bool
	window        inspect.AgeWindow
	filter        Filter
	dedupeBy      func(ctx context.Context, m *broker.Message) (string, error)
	maxRedrives   int64
	skipRuns      map[string]bool
	now           func() time.Time
	mu            sync.Mutex
	dedupe        map[string]bool // dedupe keys selected in this run

	// The filter's results: how many messages it judged and how many it
	// failed on, and its first error (mu).
	filterOK, filterFailed atomic.Int64
	firstFilterErr         error
}

// filterError is an error when the filter failed on every message it was
// given (at least one): nothing was chosen by it, only by its failures.
// A filter that judged some messages leaves the failures counted as
// ReasonFilterError, with examples, and no error.
func (s *selector) filterError() error {
	n := s.filterFailed.Load()
	if n == 0 || s.filterOK.Load() > 0 {
		return nil
	}
	s.mu.Lock()
	first := s.firstFilterErr
	s.mu.Unlock()
	return broker.Hintf("%s failed on every message it was given (%d); the first error: %w: fix the filter", broker.OptFilter, n, first)
}

func newSelector(opts Options) *selector {
	s := &selector{window: inspect.AgeWindow{OlderThan: opts.OlderThan, NewerThan: opts.NewerThan}, filter: opts.Filter, dedupeBy: opts.DedupeBy,
		maxRedrives: opts.MaxRedrives, now: opts.Now}
	s.ids = set(opts.IDs)
	s.excluded = set(opts.ExcludeIDs)
	if opts.SkipRuns != nil {
		// The run's own ID is added once it is known (newEngine).
		s.skipRuns = set(opts.SkipRuns)
		if s.skipRuns == nil {
			s.skipRuns = map[string]bool{}
		}
	}
	return s
}

// set is the members of list, nil when there are none.
func set(list []string) map[string]bool {
	if len(list) == 0 {
		return nil
	}
	m := make(map[string]bool, len(list))
	for _, id := range list {
		m[id] = true
	}
	return m
}

// selective reports whether some deliveries may be left in the source.
func (s *selector) selective() bool {
	return s.filter != nil || s.ids != nil || s.excluded != nil || s.dedupeBy != nil || !s.window.IsZero() ||
		s.maxRedrives > 0
}

// reason returns why m is not selected, or "".
func (s *selector) reason(ctx context.Context, m *broker.Message) (string, error) {
	if s.ids != nil && !s.ids[m.ID] {
		return ReasonNotSelected, nil
	}
	if s.excluded[m.ID] {
		return ReasonExcluded, nil
	}
	if s.skipRuns != nil && s.skipRuns[MarkRun(m)] {
		return ReasonReturned, nil
	}
	if !s.window.IsZero() {
		tooNew, tooOld := s.window.Outside(m, s.now())
		if tooNew {
			return ReasonTooNew, nil
		}
		if tooOld {
			return ReasonTooOld, nil
		}
	}
	if s.filter != nil {
		ok, err := s.filter.Match(ctx, m)
		if err != nil {
			if s.filterFailed.Add(1) == 1 {
				s.mu.Lock()
				s.firstFilterErr = err
				s.mu.Unlock()
			}
			return ReasonFilterError, err
		}
		s.filterOK.Add(1)
		if !ok {
			return ReasonFiltered, nil
		}
	}
	// After the filter, so that the count names the messages the
	// selection chose and the limit kept; before the dedupe key, so that
	// a message kept here does not stand for its key.
	if s.maxRedrives > 0 && previousRedrives(m) >= s.maxRedrives {
		return ReasonRedriveLimit, nil
	}
	if s.dedupeBy != nil {
		k, err := s.dedupeBy(ctx, m)
		if err != nil {
			return ReasonFilterError, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.dedupe == nil {
			s.dedupe = map[string]bool{}
		}
		if s.dedupe[k] {
			return ReasonDuplicate, nil
		}
		s.dedupe[k] = true
	}
	return "", nil
}

// limitReached reports whether the run chose Limit messages. A run that
// takes whole groups (wholeGroups) never reaches it: it reads on for the
// rest of the groups it chose.
func (e *engine) limitReached() bool {
	return e.opts.Limit > 0 && !e.wholeGroups() && e.selected.Load() >= e.opts.Limit
}

// wholeGroups reports whether Limit ends at a message group's end
// (Options.WholeGroups on a source with ordered groups).
func (e *engine) wholeGroups() bool {
	return e.opts.WholeGroups && e.opts.Limit > 0 && e.traits.Ordered
}

// laterStep reports whether m's group must wait for a later step: the run
// takes whole groups, has chosen Limit messages, and m's group is not one
// of those it chose. A group it takes is remembered.
func (e *engine) laterStep(m *broker.Message) bool {
	if !e.wholeGroups() {
		return false
	}
	g := m.SystemAttributes["MessageGroupId"]
	e.groups.mu.Lock()
	defer e.groups.mu.Unlock()
	if e.groups.chosen[g] {
		return false
	}
	if e.selected.Load() >= e.opts.Limit {
		return true
	}
	if e.groups.chosen == nil {
		e.groups.chosen = map[string]bool{}
	}
	e.groups.chosen[g] = true
	return false
}

// decide selects, transforms and addresses one delivery.
func (e *engine) decide(ctx context.Context, d *broker.Delivery) item {
	m := d.Message
	if m.ID == "" {
		m.ID = broker.Fingerprint(m)
	}
	it := item{d: d, id: m.ID}
	if e.park.again(m.ID) {
		it.again = true
		return it
	}
	if e.traits.StableIDs && e.sent.has(m.ID) {
		it.ackNow, it.sentBefore = true, true
		return it
	}
	e.tally.examined()
	if e.opts.Resume != nil && e.opts.Resume.takeConfirmed(m.ID) {
		it.ackNow = true
		return it
	}
	if reason, err := e.sel.reason(ctx, m); reason != "" {
		e.tally.skip(reason, m.ID, err)
		it.reason = reason
		return it
	}
	if e.mode == modeDiscard {
		e.selected.Add(1)
		if e.pub != nil {
			it.out = &broker.Outgoing{Message: m, Dest: e.opts.Dest}
			it.dest = e.opts.Dest.String()
		} else {
			it.ackNow = true
			it.dest = "discard"
		}
		return it
	}
	if e.laterStep(m) {
		e.tally.skip(ReasonLaterStep, m.ID, nil)
		it.reason = ReasonLaterStep
		return it
	}
	out, dest, reason, err := e.prepare(ctx, m)
	if reason != "" {
		e.tally.fail(reason, m.ID, err)
		it.reason, it.failed = reason, true
		return it
	}
	e.selected.Add(1)
	it.out, it.dest = out, dest
	if e.opts.Chosen != nil {
		e.opts.Chosen(m)
	}
	return it
}

// prepare builds the outgoing message: transform, headers, destination.
func (e *engine) prepare(ctx context.Context, m *broker.Message) (*broker.Outgoing, string, string, error) {
	dest, reason, err := e.resolve(ctx, m)
	if reason != "" {
		return nil, "", reason, err
	}
	src := m
	if e.opts.Unwrap {
		src, _ = inspect.Unwrap(m)
	}
	nm := src
	if e.opts.Transform != nil {
		t, err := e.opts.Transform(ctx, src)
		if err != nil {
			return nil, "", ReasonInvalidTransform, err
		}
		nm = t
	} else {
		nm = shallowCopy(src)
	}
	if err := e.shape(nm, m); err != nil {
		if errors.Is(err, errAttributeLimit) {
			return nil, "", ReasonAttributeLimit, err
		}
		return nil, "", ReasonRejected, err
	}
	out := &broker.Outgoing{Message: nm, Dest: dest}
	if broker.TraitsOf(e.dst, broker.Queue{Name: dest.Queue}).Ordered {
		out.GroupID = m.SystemAttributes["MessageGroupId"]
		if out.GroupID == "" {
			out.GroupID = nm.SystemAttributes["MessageGroupId"]
		}
		out.DeduplicationID = fmt.Sprintf("dlq-%s-%d", e.runID, e.seq.Add(1))
	}
	return out, dest.String(), "", nil
}

// shallowCopy copies m so that shape may add, replace and delete its
// headers and attributes: the maps are new, the body and the values in
// them are shared (shape never changes them in place).
func shallowCopy(m *broker.Message) *broker.Message {
	c := *m
	c.Headers = maps.Clone(m.Headers)
	c.Attributes = maps.Clone(m.Attributes)
	c.SystemAttributes = maps.Clone(m.SystemAttributes)
	return &c
}

// origins caches the origin of each kind of dead letter (originKey).
type origins struct {
	mu sync.Mutex
	m  map[string]originResult
	// resolver reads a message's origin: the source's, or the
	// destination's for a source that records none (an archive).
	resolver broker.OriginResolver
}

type originResult struct {
	dest broker.Destination
	err  error
}

// resolve returns the concrete destination of m.
func (e *engine) resolve(ctx context.Context, m *broker.Message) (broker.Destination, string, error) {
	if d := e.opts.Dest; d.Kind == broker.ToExchange && len(d.RoutingKeys) == 0 {
		d.RoutingKeys = messageKeys(m)
		return d, "", nil
	}
	if e.opts.Dest.Kind != broker.ToOrigin {
		return e.opts.Dest, "", nil
	}
	key := originKey(m)
	o := &e.origins
	o.mu.Lock()
	r, ok := o.m[key]
	o.mu.Unlock()
	if !ok {
		var d broker.Destination
		var err error
		if fo := frameworkOrigin(m); fo != nil {
			d = fo.Destination()
			d.Via = fo.From
		} else {
			d, err = o.resolver.Origin(ctx, e.queue, m)
		}
		r = originResult{d, err}
		if err == nil || errors.Is(err, broker.ErrConflict) || errors.Is(err, broker.ErrNotFound) {
			o.mu.Lock()
			o.m[key] = r
			o.mu.Unlock()
		}
	}
	switch {
	case r.err == nil && r.dest.Kind != "" && r.dest.Kind != broker.ToOrigin:
		return r.dest, "", nil
	case errors.Is(r.err, broker.ErrConflict):
		return broker.Destination{}, ReasonAmbiguousOrigin, r.err
	default:
		if r.err == nil {
			r.err = errors.New("no origin recorded")
		}
		return broker.Destination{}, ReasonNoOrigin, r.err
	}
}

// frameworkOrigin is the way home that the framework which dead-lettered m
// recorded, nil when the broker recorded one (a death record), which
// comes first, or when there is none.
// Redrive to origin resolves, in order: x-death; Spring's
// x-original-exchange and x-original-routingKey; MassTransit's
// MT-Fault-InputAddress; NServiceBus's NServiceBus.FailedQ; a DLQ's single
// SQS source (the source's OriginResolver).
func frameworkOrigin(m *broker.Message) *inspect.FailureOrigin {
	if m.Death != nil {
		return nil
	}
	if f := inspect.FailureOf(m); f != nil {
		return f.Origin
	}
	return nil
}

// messageKeys are the routing keys an exchange destination given without
// one uses: those the message was routed with before it was dead-lettered
// (its most recent death record, else the routing key its framework
// recorded), else the key it was delivered with.
func messageKeys(m *broker.Message) []string {
	if m.Death != nil && len(m.Death.RoutingKeys) > 0 {
		return m.Death.RoutingKeys
	}
	if fo := frameworkOrigin(m); fo != nil && fo.Exchange != "" {
		return []string{fo.RoutingKey}
	}
	return []string{m.RoutingKey}
}

// originKey groups messages whose origin is the same.
func originKey(m *broker.Message) string {
	if m.Death == nil {
		if fo := frameworkOrigin(m); fo != nil {
			return "f|" + fo.Exchange + "|" + fo.RoutingKey + "|" + fo.Queue + "|" + fo.From
		}
		return "|" + broker.RecordedSource(m)
	}
	d := m.Death
	return d.Queue + "|" + d.QueueARN + "|" + d.Exchange + "|" + strings.Join(d.RoutingKeys, ",") + "|" + broker.RecordedSource(m)
}
