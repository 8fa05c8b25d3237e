package inspect

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// Hot values: each group keeps, for each of its first maxHotSlots
// placeholders, at most hotCapacity values with their counts (the
// Space-Saving algorithm: exact while a placeholder has at most
// hotCapacity distinct values; beyond, a value that is more frequent than
// 1/hotCapacity of the messages is always kept, and each count is known to
// within the count it inherited). Results report each value's guaranteed
// count, leave out values guaranteed fewer than two messages once counts
// are approximate (noise, not a hot key), and show the first hotShown.
const (
	maxHotSlots  = 8
	hotCapacity  = 8
	hotShown     = 5
	maxHotValLen = 64
)

type hotVal struct {
	// v is the value, in a buffer of its own that an eviction reuses: the
	// values of ids and UUIDs are new in nearly every message.
	v   []byte
	n   int64 // an upper bound of the value's count
	err int64 // how much of n it inherited: n-err is a lower bound
}

type hotSlot struct {
	vals    []hotVal
	evicted bool
}

func (h *hotSlot) add(v string, n int64) {
	for i := range h.vals {
		if string(h.vals[i].v) == v {
			h.vals[i].n += n
			return
		}
	}
	if len(h.vals) < hotCapacity {
		h.vals = append(h.vals, hotVal{v: []byte(v), n: n})
		return
	}
	// Replace the least counted value; it inherits its count.
	lo := 0
	for i := range h.vals {
		if h.vals[i].n < h.vals[lo].n || h.vals[i].n == h.vals[lo].n && string(h.vals[i].v) > string(h.vals[lo].v) {
			lo = i
		}
	}
	old := &h.vals[lo]
	*old = hotVal{v: append(old.v[:0], v...), n: old.n + n, err: old.n}
	h.evicted = true
}

// countHot counts a message's placeholder values.
func (g *group) countHot(vals []string) {
	n := min(len(vals), maxHotSlots)
	if n == 0 {
		return
	}
	if g.hot == nil {
		g.hot = make([]hotSlot, n)
	}
	for i := range min(n, len(g.hot)) {
		v := vals[i]
		if len(v) > maxHotValLen {
			v = oneLine(v, maxHotValLen)
		}
		g.hot[i].add(v, 1)
	}
}

// mergedGroup is a group of the result: the groups of every shape that
// mined into one template, counted together.
type mergedGroup struct {
	group
	// star counts, for each <*> word of the template (by word index), the
	// words the shapes had there.
	star map[int]map[string]int64
}

// merged mines the reason shapes counted so far and merges their groups.
func (s *Stats) merged() []*mergedGroup {
	if s.reasonAt < 0 {
		out := make([]*mergedGroup, 0, len(s.groups))
		for _, g := range s.groups {
			out = append(out, s.mergeOf([]*group{g}, g.values))
		}
		return out
	}
	shapes := make([]string, 0, len(s.groups))
	seen := map[string]bool{}
	for _, g := range s.groups {
		if sh := g.values[s.reasonAt]; !seen[sh] {
			seen[sh] = true
			shapes = append(shapes, sh)
		}
	}
	s.tmpl = Mine(shapes)
	byKey := map[string][]*group{}
	keys := map[string][]string{}
	for _, g := range s.groups {
		vals := append([]string(nil), g.values...)
		vals[s.reasonAt] = s.tmpl[vals[s.reasonAt]]
		k := strings.Join(vals, "\x00")
		byKey[k] = append(byKey[k], g)
		keys[k] = vals
	}
	out := make([]*mergedGroup, 0, len(byKey))
	for k, members := range byKey {
		out = append(out, s.mergeOf(members, keys[k]))
	}
	return out
}

// mergeOf counts members as one group with values.
func (s *Stats) mergeOf(members []*group, values []string) *mergedGroup {
	// Members in a fixed order, so that examples and hot values do not
	// depend on map order.
	sort.Slice(members, func(i, j int) bool {
		return strings.Join(members[i].values, "\x00") < strings.Join(members[j].values, "\x00")
	})
	m := &mergedGroup{group: group{values: values}}
	var tmplWords []string
	if s.reasonAt >= 0 && strings.Contains(values[s.reasonAt], PhAny) {
		tmplWords = words(values[s.reasonAt])
		m.star = map[int]map[string]int64{}
	}
	for _, g := range members {
		m.count += g.count
		m.bytes += g.bytes
		m.lastHour += g.lastHour
		if !g.oldest.IsZero() {
			if m.oldest.IsZero() || g.oldest.Before(m.oldest) {
				m.oldest = g.oldest
			}
			if g.newest.After(m.newest) {
				m.newest = g.newest
			}
		}
		for _, e := range g.examples {
			if len(m.examples) < s.opts.Examples {
				m.examples = append(m.examples, e)
			}
		}
		if g.hist != nil {
			if m.hist == nil {
				m.hist = make([]uint32, len(g.hist))
			}
			for i, c := range g.hist {
				m.hist[i] += c
			}
		}
		if len(g.hot) > 0 && m.hot == nil {
			m.hot = make([]hotSlot, len(g.hot))
		}
		for i := range min(len(g.hot), len(m.hot)) {
			for _, v := range g.hot[i].vals {
				if v.n > v.err {
					m.hot[i].add(string(v.v), v.n-v.err)
				}
			}
			m.hot[i].evicted = m.hot[i].evicted || g.hot[i].evicted
		}
		if tmplWords != nil {
			ws := words(g.values[s.reasonAt])
			for i, w := range tmplWords {
				if w == PhAny && i < len(ws) {
					if m.star[i] == nil {
						m.star[i] = map[string]int64{}
					}
					m.star[i][ws[i]] += g.count
				}
			}
		}
	}
	return m
}

// hotValues lists the hot values of each placeholder of template, in
// order.
func (m *mergedGroup) hotValues(template string) []HotValues {
	var out []HotValues
	typed, pos := 0, 0
	for i, w := range words(template) {
		if w == PhAny {
			pos++
			h := HotValues{Placeholder: PhAny, Position: pos}
			for v, n := range m.star[i] {
				h.Values = append(h.Values, HotValue{v, n})
			}
			out = append(out, h.top())
			continue
		}
		for _, ph := range placeholders(w) {
			pos++
			if typed < len(m.hot) {
				slot := m.hot[typed]
				h := HotValues{Placeholder: ph, Position: pos, Approximate: slot.evicted}
				for _, v := range slot.vals {
					if c := v.n - v.err; c >= 2 || !slot.evicted && c > 0 {
						h.Values = append(h.Values, HotValue{string(v.v), c})
					}
				}
				out = append(out, h.top())
			}
			typed++
		}
	}
	return out
}

// top keeps the hotShown most frequent values, most frequent first.
func (h HotValues) top() HotValues {
	sort.Slice(h.Values, func(i, j int) bool {
		a, b := h.Values[i], h.Values[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Value < b.Value
	})
	if len(h.Values) > hotShown {
		h.Values = h.Values[:hotShown]
	}
	return h
}

// timeline places death times in fineBuckets buckets of width w seconds
// from t0, shared by every group. A time outside moves t0, and doubles the
// width when the times seen no longer fit, adding up each group's buckets to match, so
// memory stays fixed however long the queue's span.
type timeline struct {
	t0, w      int64
	minT, maxT int64 // the times seen
}

const fineBuckets = 128

// maxTimelineSec bounds the times a timeline places (about 36 billion
// years either side of 1970): a timestamp beyond, which only a corrupt or
// hostile message carries (an AMQP timestamp of 2^62), counts at the
// bound. Within it, t0+fineBuckets*w and every difference of times fit in
// an int64, so the width never doubles to overflow.
const maxTimelineSec = 1 << 60

// timelineSec is t in Unix seconds, held within ±maxTimelineSec.
func timelineSec(t time.Time) int64 {
	return max(-maxTimelineSec, min(maxTimelineSec, t.Unix()))
}

func (tl *timeline) add(s *Stats, g *group, t int64) {
	t = max(-maxTimelineSec, min(maxTimelineSec, t))
	if tl.w == 0 {
		tl.w, tl.t0, tl.minT, tl.maxT = 1, t, t, t
	}
	if t < tl.t0 || t >= tl.t0+fineBuckets*tl.w {
		tl.widen(s, t)
	}
	tl.minT, tl.maxT = min(tl.minT, t), max(tl.maxT, t)
	if g.hist == nil {
		g.hist = make([]uint32, fineBuckets)
	}
	g.hist[(t-tl.t0)/tl.w]++
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func (tl *timeline) widen(s *Stats, t int64) {
	lo, hi := min(tl.minT, t), max(tl.maxT, t)
	// Shift first; double the width only when the span needs it.
	w := tl.w
	t0 := floorDiv(lo, w) * w
	for hi >= t0+fineBuckets*w {
		w *= 2
		t0 = floorDiv(lo, w) * w
	}
	remap := func(h []uint32) {
		if h == nil {
			return
		}
		var nh [fineBuckets]uint32
		for i, c := range h {
			if c != 0 {
				nh[(tl.t0+int64(i)*tl.w-t0)/w] += c
			}
		}
		copy(h, nh[:])
	}
	for _, g := range s.groups {
		remap(g.hist)
	}
	if s.other != nil {
		remap(s.other.hist)
	}
	tl.t0, tl.w = t0, w
}

// resample turns fine buckets into TrendBuckets buckets of step seconds
// from start, each fine bucket counted where its middle falls.
func (tl *timeline) resample(h []uint32, start, step int64) []int64 {
	out := make([]int64, TrendBuckets)
	for i, c := range h {
		if c == 0 {
			continue
		}
		mid := tl.t0 + int64(i)*tl.w + tl.w/2
		k := floorDiv(mid-start, step)
		out[max(0, min(TrendBuckets-1, k))] += int64(c)
	}
	return out
}

var sparkLevels = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws a trend on one line, one character a bucket: ▁ for none,
// then ▂ to █ in proportion to the largest bucket.
func Sparkline(trend []int64) string {
	var hi int64
	for _, c := range trend {
		hi = max(hi, c)
	}
	out := make([]rune, len(trend))
	for i, c := range trend {
		lvl := 0
		if c > 0 {
			lvl = 1 + int((c*int64(len(sparkLevels)-2)+hi-1)/hi)
		}
		out[i] = sparkLevels[min(lvl, len(sparkLevels)-1)]
	}
	return string(out)
}

// HotText is a group's hot values on one line: for each placeholder its
// most frequent values with their counts ("<id> cus_9901×29 cus_9903×29;
// <num> 503×200"; "×≥12" when the count is a lower bound), at most perSlot
// values each.
func HotText(hot []HotValues, perSlot int) string {
	var b strings.Builder
	for _, h := range hot {
		if len(h.Values) == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(h.Placeholder)
		for _, v := range h.Values[:min(perSlot, len(h.Values))] {
			b.WriteString(" ")
			b.WriteString(v.Value)
			b.WriteString("×")
			if h.Approximate {
				b.WriteString("≥")
			}
			b.WriteString(strconv.FormatInt(v.Count, 10))
		}
	}
	return b.String()
}

// GroupMessages counts msgs by spec (a group-by list) as Stats does, and
// returns of, which gives the index of a message's group in the result's
// Groups (-1 for none), for views that show a group's messages. A message
// of msgs is looked up; any other (a copy read again, an edited message
// republished) is classified against the same groups, so that a view keeps
// showing a group across a reload.
func GroupMessages(ctx context.Context, spec string, msgs []*broker.Message, now time.Time) (StatsResult, func(*broker.Message) int, error) {
	gs, err := ParseGroupBy(spec)
	if err != nil {
		return StatsResult{}, nil, err
	}
	s := NewStats("", StatsOptions{GroupBy: gs, NoDuplicates: true, Examples: 1, Now: now})
	for _, m := range msgs {
		if err := s.Add(ctx, m); err != nil {
			return StatsResult{}, nil, err
		}
	}
	res := s.Result()
	index := make(map[string]int, len(res.Groups))
	for i, g := range res.Groups {
		index[strings.Join(g.Values, "\x00")] = i
	}
	other, hasOther := index[strings.Repeat(OtherGroup+"\x00", len(gs)-1)+OtherGroup]
	var mu sync.Mutex // Classify is not safe for concurrent use
	classify := func(m *broker.Message) (int, error) {
		mu.Lock()
		vals, err := s.Classify(ctx, m)
		mu.Unlock()
		if err != nil || vals == nil {
			return -1, err
		}
		if i, ok := index[strings.Join(vals, "\x00")]; ok {
			return i, nil
		}
		if hasOther {
			return other, nil
		}
		return -1, nil
	}
	known := make(map[*broker.Message]int, len(msgs))
	for _, m := range msgs {
		i, err := classify(m)
		if err != nil {
			return StatsResult{}, nil, err
		}
		known[m] = i
	}
	of := func(m *broker.Message) int {
		if i, ok := known[m]; ok {
			return i
		}
		i, err := classify(m)
		if err != nil {
			return -1
		}
		return i
	}
	return res, of, nil
}
