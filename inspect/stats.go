package inspect

import (
	"context"
	"errors"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// The aggregator, one piece: Add, Result and their counters keep one
// bound together (what a group holds, when it stops growing). The
// --group-by parser is in groupby.go, a message's source in source.go.

// Placeholders for group values that do not exist.
const (
	NoValue    = "(none)"
	Unknown    = "(unknown)"
	OtherGroup = "(other)"
)

// StatsOptions shape an aggregation.
type StatsOptions struct {
	// GroupBy defaults to reason.
	GroupBy []Grouping
	// Filter selects the messages counted; the others are only read.
	Filter *Query
	// Groups, when set, counts only the messages of the selected groups
	// (with Filter: of both).
	Groups *GroupSelector
	// Window selects the messages counted by age, at Now.
	Window AgeWindow
	// Reason overrides Reason (a reason jq expression); nil uses Reason. Like
	// Add, it must keep no part of the message but strings: messages may
	// be lent (see Stats.Read).
	Reason ReasonFunc
	// DupKey is the duplicate key (a jq expression); nil uses the message
	// ID. Null or empty keys are not counted.
	DupKey *Query
	// NoDuplicates turns duplicate detection off.
	NoDuplicates bool
	// Examples is the number of example IDs kept per group (default 3).
	Examples int
	// MaxGroups bounds the number of distinct groups (default 10,000);
	// messages of further groups are counted in one "(other)" group so that
	// memory stays bounded.
	MaxGroups int
	// Source finds the source of messages that do not name theirs; nil
	// counts them under Unknown.
	Source *QueueSource
	// Now is the reference time for ages (default time.Now()).
	Now time.Time
}

// GroupStats are the counters of one group.
type GroupStats struct {
	// Values are the group's values, one per grouping, in GroupBy order.
	Values []string `json:"-"`
	// Key maps each grouping's name to its value.
	Key    map[string]string `json:"key"`
	Count  int64             `json:"count"`
	Share  float64           `json:"share"`
	Bytes  int64             `json:"bytes"`
	Oldest *time.Time        `json:"oldest,omitempty"`
	Newest *time.Time        `json:"newest,omitempty"`
	// OldestAgeSeconds is the age of the oldest message, relative to the
	// result's Now.
	OldestAgeSeconds *float64 `json:"oldest_age_seconds,omitempty"`
	NewestAgeSeconds *float64 `json:"newest_age_seconds,omitempty"`
	Examples         []string `json:"examples"`
	// ID is the group ID of the reason's template (GroupID), with the
	// reason grouping; Template is that template.
	ID       string `json:"id,omitempty"`
	Template string `json:"template,omitempty"`
	// LastHour counts the messages that died in the hour before Now.
	LastHour int64 `json:"last_hour"`
	// Trend counts the group's messages in TrendBuckets equal spans of
	// time from the result's TrendStart (death time, else enqueue time).
	Trend []int64 `json:"trend,omitempty"`
	// Hot are the most frequent values of each placeholder of the
	// template: the hot keys.
	Hot []HotValues `json:"hot,omitempty"`
}

// HotValues are the most frequent values of one placeholder.
type HotValues struct {
	// Placeholder is <num>, <id>, …, or <*> for a merged word.
	Placeholder string `json:"placeholder"`
	// Position is the placeholder's place in the template, from 1.
	Position int        `json:"position"`
	Values   []HotValue `json:"values"`
	// Approximate is set when more distinct values came than are kept:
	// counts are then lower bounds, and values seen fewer than twice are
	// left out (see the Space-Saving algorithm).
	Approximate bool `json:"approximate,omitempty"`
}

// HotValue is one value with how many messages had it.
type HotValue struct {
	Value string `json:"value"`
	Count int64  `json:"count"`
}

// DuplicateStats reports messages whose duplicate key was seen before.
type DuplicateStats struct {
	// Key is the duplicate key expression ("id" for the message ID).
	Key string `json:"key"`
	// Messages counts messages whose key had already been seen: a key seen
	// three times counts two.
	Messages int64 `json:"messages"`
	// Examples are up to ten duplicated keys with how often each was seen.
	Examples []DuplicateExample `json:"examples"`
	// FalsePositiveRate is the estimated chance that a message was counted
	// as a duplicate without being one (see Stats).
	FalsePositiveRate float64 `json:"false_positive_rate"`
}

// DuplicateExample is one duplicated key. Count is exact from the moment
// the key was first found duplicated (so it includes the first sighting).
type DuplicateExample struct {
	Key   string `json:"key"`
	Count int64  `json:"count"`
	// IDs are the message IDs of the copies seen after the first (at most
	// ten): with a duplicate key other than the ID, what the id or
	// exclude-id options take; a redrive deduplicated by key moves one per key.
	IDs []string `json:"ids"`
}

// StatsResult is the outcome of an aggregation.
type StatsResult struct {
	Queue   string   `json:"queue"`
	GroupBy []string `json:"group_by"`
	// Read counts every message read; Total those that matched the filter.
	Read  int64 `json:"read"`
	Total int64 `json:"total"`
	// OutOfReach counts messages the queue held that the read could not
	// see (broker.PeekReport.OutOfReach: an SQS FIFO queue shows only the
	// head of each message group); they are in neither Read nor Total.
	OutOfReach int64      `json:"out_of_reach"`
	Bytes      int64      `json:"bytes"`
	Oldest     *time.Time `json:"oldest,omitempty"`
	Newest     *time.Time `json:"newest,omitempty"`
	// Groups are sorted by count, largest first, then by key.
	Groups []GroupStats `json:"groups"`
	// Folded counts the messages of groups beyond MaxGroups, which were
	// counted in the "(other)" group.
	Folded     int64           `json:"folded,omitempty"`
	Duplicates *DuplicateStats `json:"duplicates,omitempty"`
	// ReasonErrors counts messages whose reason expression failed (they
	// are grouped as "(unknown)").
	ReasonErrors int64     `json:"reason_errors,omitempty"`
	Now          time.Time `json:"now"`
	// LastHour counts the messages that died in the hour before Now.
	LastHour int64 `json:"last_hour"`
	// TrendStart and TrendStepSeconds place each group's Trend buckets:
	// bucket i spans [start + i·step, start + (i+1)·step).
	TrendStart       *time.Time `json:"trend_start,omitempty"`
	TrendStepSeconds float64    `json:"trend_step_seconds,omitempty"`
}

// TrendBuckets is the number of buckets of a group's trend.
const TrendBuckets = 16

type group struct {
	values         []string
	count, bytes   int64
	oldest, newest time.Time
	examples       []string
	lastHour       int64
	hist           []uint32 // fine timeline buckets, see timeline
	hot            []hotSlot
}

// Stats aggregates messages in memory that does not grow with their number:
// one counter set per distinct group (at most MaxGroups, each holding at most
// Examples IDs), and a fixed 8 MiB Bloom filter (6 probes) for duplicates.
//
// Duplicate counting is exact in one direction: a real duplicate is never
// missed. A new key may be counted as a duplicate without being one with the
// probability reported in DuplicateStats.FalsePositiveRate, which grows with
// the number of distinct keys already seen: 1 in 2.5 million after 1,000,000,
// 1 in 50,000 after 2,000,000, 1 in 450 after 5,000,000, 4% after
// 10,000,000.
type Stats struct {
	opts     StatsOptions
	groups   map[string]*group
	other    *group
	foldedN  int64
	res      StatsResult
	bloom    *bloom
	dupEx    map[string]int64
	dupIDs   map[string][]string
	dupOrder []string
	keyBuf   []byte
	needDoc  bool
	// reason shapes
	reasonAt int // index of the reason grouping, -1 without
	shaper   shaper
	shapeOK  bool // the shaper holds this message's shape and values
	fail     *Failure
	failDone bool // fail is this message's
	interned map[string]string
	tl       timeline
	tmpl     Templates
}

// NewStats starts an aggregation.
func NewStats(queue string, opts StatsOptions) *Stats {
	if len(opts.GroupBy) == 0 {
		opts.GroupBy = []Grouping{{Kind: "reason"}}
	}
	if opts.Examples <= 0 {
		opts.Examples = 3
	}
	if opts.MaxGroups <= 0 {
		opts.MaxGroups = 10000
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	s := &Stats{opts: opts, groups: make(map[string]*group), reasonAt: -1, interned: map[string]string{}}
	s.res.Queue = queue
	s.res.Now = opts.Now.UTC()
	for i, g := range opts.GroupBy {
		if g.Kind == "reason" {
			s.reasonAt = i
		}
		s.res.GroupBy = append(s.res.GroupBy, g.Name())
		if g.query != nil {
			s.needDoc = true
		}
	}
	if !opts.NoDuplicates {
		s.bloom = newBloom(1<<26, 6)
		s.dupEx = make(map[string]int64)
		s.dupIDs = make(map[string][]string)
		key := "id"
		if opts.DupKey != nil {
			key = opts.DupKey.String()
		}
		s.res.Duplicates = &DuplicateStats{Key: key, Examples: []DuplicateExample{}}
	}
	return s
}

// deadTime is when a message first died, else when it was published.
func deadTime(m *broker.Message) time.Time {
	t := m.Timestamp
	if m.Death != nil && !m.Death.First.IsZero() {
		t = m.Death.First
	}
	if t.IsZero() {
		return t
	}
	// A time beyond the years JSON (RFC 3339) can write, which only a
	// corrupt or hostile message carries (an AMQP timestamp of 2^62),
	// counts at the nearest one, so that the result can be written.
	switch sec := t.Unix(); {
	case sec < minResultTime.Unix():
		return minResultTime
	case sec > maxResultTime.Unix():
		return maxResultTime
	}
	return t
}

// minResultTime and maxResultTime bound the times a StatsResult holds:
// encoding/json writes years 0 to 9999 only.
var (
	minResultTime = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	maxResultTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

// Add counts one message. It returns an error only when a jq expression
// (filter, duplicate key) fails or ctx ends.
func (s *Stats) Add(ctx context.Context, m *broker.Message) error {
	s.res.Read++
	if !s.opts.Window.Admits(m, s.opts.Now) {
		return nil
	}
	var doc map[string]any
	getDoc := func() map[string]any {
		if doc == nil {
			doc = DocumentAt(m, s.opts.Now)
		}
		return doc
	}
	if s.opts.Filter != nil {
		ok, err := s.opts.Filter.MatchDoc(ctx, getDoc())
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
	}
	if s.opts.Groups != nil {
		ok, err := s.opts.Groups.Match(ctx, m)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
	}
	s.res.Total++
	size := int64(len(m.Body))
	s.res.Bytes += size
	t := deadTime(m)
	if !t.IsZero() {
		if s.res.Oldest == nil || t.Before(*s.res.Oldest) {
			tt := t.UTC()
			s.res.Oldest = &tt
		}
		if s.res.Newest == nil || t.After(*s.res.Newest) {
			tt := t.UTC()
			s.res.Newest = &tt
		}
	}

	recent := !t.IsZero() && s.opts.Now.Sub(t) < time.Hour
	if recent {
		s.res.LastHour++
	}
	s.shapeOK = false
	s.failDone = false
	key := s.keyBuf[:0]
	var vals [8]string
	values := vals[:0]
	for i, g := range s.opts.GroupBy {
		v, err := s.value(ctx, g, m, t, getDoc)
		if err != nil {
			return err
		}
		if i > 0 {
			key = append(key, 0)
		}
		key = append(key, v...)
		values = append(values, v)
	}
	s.keyBuf = key
	gr := s.groups[string(key)]
	if gr == nil {
		if len(s.groups) >= s.opts.MaxGroups {
			s.foldedN++
			if s.other == nil {
				ov := make([]string, len(values))
				for i := range ov {
					ov[i] = OtherGroup
				}
				s.other = &group{values: ov}
			}
			gr = s.other
		} else {
			gr = &group{values: append([]string(nil), values...)}
			s.groups[string(key)] = gr
		}
	}
	gr.count++
	gr.bytes += size
	if !t.IsZero() {
		if gr.oldest.IsZero() || t.Before(gr.oldest) {
			gr.oldest = t
		}
		if gr.newest.IsZero() || t.After(gr.newest) {
			gr.newest = t
		}
	}
	if len(gr.examples) < s.opts.Examples {
		gr.examples = append(gr.examples, m.ID)
	}
	if recent {
		gr.lastHour++
	}
	if !t.IsZero() {
		s.tl.add(s, gr, t.Unix())
	}
	if s.shapeOK && gr != s.other {
		gr.countHot(s.shaper.vals)
	}

	if s.bloom != nil {
		var dk string
		if s.opts.DupKey != nil {
			v, ok, err := s.opts.DupKey.First(ctx, getDoc())
			if err != nil {
				return err
			}
			if ok {
				dk = ValueText(v)
			}
		} else {
			dk = m.ID
		}
		if dk != "" {
			if n, ok := s.dupEx[dk]; ok {
				s.dupEx[dk] = n + 1
				s.res.Duplicates.Messages++
				s.dupID(dk, m.ID)
			} else if s.bloom.addSeen(dk) {
				s.res.Duplicates.Messages++
				if len(s.dupOrder) < 10 {
					s.dupEx[dk] = 2
					s.dupOrder = append(s.dupOrder, dk)
					s.dupID(dk, m.ID)
				}
			}
		}
	}
	return nil
}

// dupID records the ID of a duplicated copy of an example key.
func (s *Stats) dupID(key, id string) {
	if ids := s.dupIDs[key]; len(ids) < 10 {
		s.dupIDs[key] = append(ids, id)
	}
}

// jsonBody returns the body, inflated when its content encoding says so.
func jsonBody(m *broker.Message) []byte {
	b := m.Body
	if m.Properties.ContentEncoding != "" || isGzip(b) {
		if in, _, err := inflate(strings.ToLower(m.Properties.ContentEncoding), b); err == nil {
			b = in
		}
	}
	return b
}

// failure is m's Failure record, decoded once per Add.
func (s *Stats) failure(m *broker.Message) *Failure {
	if !s.failDone {
		s.fail, s.failDone = FailureOf(m), true
	}
	return s.fail
}

// reason is the failure reason of m, by opts.Reason or Reason.
func (s *Stats) reason(ctx context.Context, m *broker.Message) (string, error) {
	if s.opts.Reason == nil {
		return Reason(m), nil
	}
	r, err := s.opts.Reason(ctx, m)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return "", err
		}
		s.res.ReasonErrors++
		return "", nil
	}
	return r, nil
}

// intern returns b as a string, the same string for equal shapes (as many
// as there may be groups), so that counting a known shape allocates
// nothing.
func (s *Stats) intern(b []byte) string {
	if v, ok := s.interned[string(b)]; ok {
		return v
	}
	v := string(b)
	if len(s.interned) < s.opts.MaxGroups {
		s.interned[v] = v
	}
	return v
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Result returns the aggregation so far. With the reason grouping, the
// shapes counted so far are mined (Mine) and the groups of shapes that
// merge into one template are counted as one.
func (s *Stats) Result() StatsResult {
	r := s.res
	groups := s.merged()
	r.Groups = make([]GroupStats, 0, len(groups)+1)
	var step int64
	if r.Oldest != nil {
		span := timelineSec(*r.Newest) - timelineSec(*r.Oldest) + 1
		step = max(1, (span+TrendBuckets-1)/TrendBuckets)
		start := r.Oldest.Truncate(time.Second)
		r.TrendStart = &start
		r.TrendStepSeconds = float64(step)
	}
	add := func(g *mergedGroup) {
		gs := GroupStats{
			Values:   g.values,
			Key:      make(map[string]string, len(g.values)),
			Count:    g.count,
			Bytes:    g.bytes,
			Examples: append([]string{}, g.examples...),
			LastHour: g.lastHour,
		}
		for i, v := range g.values {
			gs.Key[r.GroupBy[i]] = v
		}
		if s.reasonAt >= 0 && g.values[s.reasonAt] != OtherGroup {
			gs.Template = g.values[s.reasonAt]
			gs.ID = GroupID(gs.Template)
			gs.Hot = g.hotValues(gs.Template)
		}
		if r.Total > 0 {
			gs.Share = math.Round(float64(g.count)/float64(r.Total)*1e6) / 1e6
		}
		if !g.oldest.IsZero() {
			o, n := g.oldest.UTC(), g.newest.UTC()
			gs.Oldest, gs.Newest = &o, &n
			oa, na := r.Now.Sub(o).Seconds(), r.Now.Sub(n).Seconds()
			gs.OldestAgeSeconds, gs.NewestAgeSeconds = &oa, &na
		}
		if step > 0 {
			gs.Trend = s.tl.resample(g.hist, timelineSec(*r.Oldest), step)
		}
		r.Groups = append(r.Groups, gs)
	}
	for _, g := range groups {
		add(g)
	}
	sort.Slice(r.Groups, func(i, j int) bool {
		a, b := r.Groups[i], r.Groups[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return strings.Join(a.Values, "\x00") < strings.Join(b.Values, "\x00")
	})
	if s.other != nil {
		add(s.mergeOf([]*group{s.other}, s.other.values))
		r.Folded = s.foldedN
	}
	if s.res.Duplicates != nil {
		d := *s.res.Duplicates
		d.Examples = make([]DuplicateExample, 0, len(s.dupOrder))
		for _, k := range s.dupOrder {
			ids := s.dupIDs[k]
			if ids == nil {
				ids = []string{}
			}
			d.Examples = append(d.Examples, DuplicateExample{Key: k, Count: s.dupEx[k], IDs: ids})
		}
		d.FalsePositiveRate = s.bloom.falsePositiveRate()
		r.Duplicates = &d
	}
	return r
}

// ReusingPeeker is a Peeker that can also lend its messages: each is valid
// only while visit runs, and its memory is reused for a later one, so that
// reading allocates next to nothing (archives offer it).
type ReusingPeeker interface {
	PeekReused(ctx context.Context, queue string, opts broker.PeekOptions, visit func(*broker.Message) error) (broker.PeekReport, error)
}

// Read aggregates every message that peeking queue through p visits (under
// p's peek-safety rules; opts.Limit 0 reads the whole queue). Add keeps no
// part of a message but strings, so Read borrows messages from a
// ReusingPeeker. each, when set, runs after each message is counted (for
// progress).
func (s *Stats) Read(ctx context.Context, p broker.Peeker, queue string, opts broker.PeekOptions, each func()) (broker.PeekReport, error) {
	rep, err := readEach(ctx, p, queue, opts, s.Add, each)
	s.res.OutOfReach += rep.OutOfReach
	return rep, err
}

// CollectStats reads queue through p under its peek-safety rules and
// aggregates every message. peek.Limit 0 reads the whole queue.
func CollectStats(ctx context.Context, p broker.Peeker, queue string, peek broker.PeekOptions, opts StatsOptions) (StatsResult, broker.PeekReport, error) {
	s := NewStats(queue, opts)
	rep, err := s.Read(ctx, p, queue, peek, nil)
	if errors.Is(err, broker.ErrStop) {
		err = nil
	}
	return s.Result(), rep, err
}
