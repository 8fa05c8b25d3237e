package inspect

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// Triage reads a queue once, as Stats does (the same read, the same
// failure groups and IDs), and keeps per group the evidence a plan needs:
// exception types, frameworks, attempts, earlier redrives (dlq's own
// x-dlq-redrive mark), destinations by origin and one example reason. Its
// memory is that of Stats plus a few small counters per group.
type Triage struct {
	stats *Stats
	src   *QueueSource
	per   map[string]*triageAcc // by reason shape
	// the message being counted: its reason and failure record, decoded
	// once for both Stats and the evidence.
	cur     *broker.Message
	curText string
	curFail *Failure
}

// TriageOptions configure a Triage.
type TriageOptions struct {
	// Window, Source, MaxGroups and Now are those of StatsOptions.
	Window    AgeWindow
	Source    *QueueSource
	MaxGroups int
	Now       time.Time
	// Rules classify the groups (nil: BuiltinRules).
	Rules []TriageRule
	// Quiet is how long a group must have had no new dead letter to count
	// as stopped (0: DefaultQuiet).
	Quiet time.Duration
}

// DefaultQuiet is how long a group must be quiet to count as stopped.
const DefaultQuiet = 10 * time.Minute

// triageCap bounds each per-group counter of distinct values.
const triageCap = 8

type counter struct {
	vals []HotValue
	more int64
}

func (c *counter) add(v string) {
	if v == "" {
		return
	}
	for i := range c.vals {
		if c.vals[i].Value == v {
			c.vals[i].Count++
			return
		}
	}
	if len(c.vals) < triageCap {
		c.vals = append(c.vals, HotValue{Value: strings.Clone(v), Count: 1})
		return
	}
	c.more++
}

func (c *counter) merge(o *counter) {
	for _, v := range o.vals {
		found := false
		for i := range c.vals {
			if c.vals[i].Value == v.Value {
				c.vals[i].Count += v.Count
				found = true
				break
			}
		}
		if !found {
			if len(c.vals) < triageCap {
				c.vals = append(c.vals, v)
			} else {
				c.more += v.Count
			}
		}
	}
	c.more += o.more
}

// sorted lists the values, most frequent first.
func (c *counter) sorted() []HotValue {
	out := append([]HotValue{}, c.vals...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Value < out[j].Value
	})
	return out
}

type triageAcc struct {
	types, frameworks, dests counter
	attemptsSum, attemptsMax int64
	redriven, redrivesMax    int64
	example                  string
}

func (a *triageAcc) merge(o *triageAcc) {
	a.types.merge(&o.types)
	a.frameworks.merge(&o.frameworks)
	a.dests.merge(&o.dests)
	a.attemptsSum += o.attemptsSum
	a.attemptsMax = max(a.attemptsMax, o.attemptsMax)
	a.redriven += o.redriven
	a.redrivesMax = max(a.redrivesMax, o.redrivesMax)
	if a.example == "" {
		a.example = o.example
	}
}

// NewTriage starts a triage of queue.
func NewTriage(queue string, opts TriageOptions) *Triage {
	t := &Triage{src: opts.Source, per: map[string]*triageAcc{}}
	t.stats = NewStats(queue, StatsOptions{
		GroupBy:      []Grouping{{Kind: "reason"}},
		Window:       opts.Window,
		Source:       opts.Source,
		MaxGroups:    opts.MaxGroups,
		Now:          opts.Now,
		NoDuplicates: true,
		Examples:     3,
		Reason:       t.reason,
	})
	return t
}

// reason is the Stats reason of the message being added: Reason, with its
// failure record kept for the evidence.
func (t *Triage) reason(_ context.Context, m *broker.Message) (string, error) {
	if m != t.cur {
		t.cur = m
		t.curText, t.curFail = reasonAndFailure(m)
	}
	return t.curText, nil
}

// Attempts is how often m was tried, as far as anything on it says: the
// broker's death count or delivery count (SQS: receive count), or the
// framework's own count.
func Attempts(m *broker.Message, f *Failure) int64 {
	var n int64
	if m.Death != nil {
		n = m.Death.Count
	}
	n = max(n, m.DeliveryCount)
	if f != nil {
		n = max(n, f.Attempts)
	}
	return n
}

// Add counts one message.
func (t *Triage) Add(ctx context.Context, m *broker.Message) error {
	t.cur, t.curText, t.curFail = nil, "", nil
	before := t.stats.res.Total
	if err := t.stats.Add(ctx, m); err != nil {
		return err
	}
	if t.stats.res.Total == before {
		return nil // outside the window
	}
	shape := string(t.stats.keyBuf)
	a := t.per[shape]
	if a == nil {
		if len(t.per) >= t.stats.opts.MaxGroups {
			shape = OtherGroup
			if a = t.per[shape]; a == nil {
				a = &triageAcc{}
				t.per[shape] = a
			}
		} else {
			a = &triageAcc{}
			t.per[strings.Clone(shape)] = a
		}
	}
	if t.cur != m { // no reason was asked (cannot happen with a reason grouping)
		t.curText, t.curFail = reasonAndFailure(m)
	}
	f := t.curFail
	if a.example == "" {
		a.example = strings.Clone(oneLine(t.curText, 300))
	}
	if f != nil {
		a.types.add(clean(f.ExceptionType))
		a.frameworks.add(f.Framework)
	}
	n := Attempts(m, f)
	a.attemptsSum += n
	a.attemptsMax = max(a.attemptsMax, n)
	if r := Redrives(m); r > 0 {
		a.redriven++
		a.redrivesMax = max(a.redrivesMax, r)
	}
	a.dests.add(t.destination(ctx, m, f))
	return nil
}

// destination is where a redrive to the origin would send m.
func (t *Triage) destination(ctx context.Context, m *broker.Message, f *Failure) string {
	if m.Death != nil && (m.Death.Queue != "" || m.Death.QueueARN != "") {
		return Source(m)
	}
	if broker.RecordedSource(m) != "" {
		return Source(m)
	}
	if f != nil && f.Origin != nil {
		if d := f.Origin.Destination(); d.Kind == broker.ToQueue {
			return d.Queue
		} else {
			return d.String()
		}
	}
	if t.src != nil {
		return t.src.Of(ctx, m)
	}
	return ""
}

// Read triages every message that peeking queue through p visits, under
// p's peek-safety rules, as Stats.Read does.
func (t *Triage) Read(ctx context.Context, p broker.Peeker, queue string, opts broker.PeekOptions, each func()) (broker.PeekReport, error) {
	rep, err := readEach(ctx, p, queue, opts, t.Add, each)
	t.stats.res.OutOfReach += rep.OutOfReach
	return rep, err
}

// TriageEvidence is what the messages of one group say.
type TriageEvidence struct {
	ExceptionTypes []HotValue `json:"exception_types" yaml:"exception_types,omitempty"`
	Frameworks     []HotValue `json:"frameworks" yaml:"frameworks,omitempty"`
	// Destinations are where a redrive to the origin sends them.
	Destinations []HotValue `json:"destinations" yaml:"destinations,omitempty"`
	AttemptsMax  int64      `json:"attempts_max" yaml:"attempts_max"`
	AttemptsMean float64    `json:"attempts_mean" yaml:"attempts_mean"`
	// Redriven counts the messages dlq redrove before (x-dlq-redrive);
	// RedrivesMax is the most times one was.
	Redriven    int64  `json:"redriven" yaml:"redriven"`
	RedrivesMax int64  `json:"redrives_max" yaml:"redrives_max"`
	Example     string `json:"example_reason" yaml:"example_reason"`
}

// Result is the aggregation as stats reports it, and the evidence of each
// of its groups by group ID ("" for the (other) group).
func (t *Triage) Result() (StatsResult, map[string]*TriageEvidence) {
	res := t.stats.Result()
	accs := map[string]*triageAcc{}
	for shape, a := range t.per {
		id := ""
		if shape != OtherGroup {
			tm := shape
			if v, ok := t.stats.tmpl[shape]; ok {
				tm = v
			}
			id = GroupID(tm)
		}
		if accs[id] == nil {
			accs[id] = &triageAcc{}
		}
		accs[id].merge(a)
	}
	ev := make(map[string]*TriageEvidence, len(accs))
	for _, g := range res.Groups {
		a := accs[g.ID]
		if a == nil {
			continue
		}
		e := &TriageEvidence{
			ExceptionTypes: a.types.sorted(),
			Frameworks:     a.frameworks.sorted(),
			Destinations:   a.dests.sorted(),
			AttemptsMax:    a.attemptsMax,
			Redriven:       a.redriven,
			RedrivesMax:    a.redrivesMax,
			Example:        a.example,
		}
		if g.Count > 0 {
			e.AttemptsMean = float64(a.attemptsSum*100/g.Count) / 100
		}
		ev[g.ID] = e
	}
	return res, ev
}

// GroupOf returns the ID of the group m is counted in by the last Result
// ("" when m is not counted: outside the window).
func (t *Triage) GroupOf(ctx context.Context, m *broker.Message) (string, error) {
	vals, err := t.stats.Classify(ctx, m)
	if err != nil || vals == nil {
		return "", err
	}
	return GroupID(vals[0]), nil
}
