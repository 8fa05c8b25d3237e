package topology

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"time"
)

// SQSModel is the SQS half of a model.
type SQSModel struct {
	Queues  []SQSQueue
	Ladders []SQSLadder
}

// SQSQueue is an SQS queue with the attributes the spec sets. RedrivePolicy
// and RedriveAllowPolicy are kept as names (DeadLetter, RedriveAllow) and
// rendered with ARNs once the queues exist.
type SQSQueue struct {
	Name         string
	FIFO         bool
	Attributes   map[string]string
	DeadLetter   *SQSDeadLetter
	RedriveAllow *SQSRedriveAllow
	Pos          Pos
	From         string
}

// SQSLadder describes an expanded SQS retry ladder for consumers and graphs.
type SQSLadder struct {
	Main   string
	Tiers  []string
	Delays []time.Duration
	DLQ    string
	Pos    Pos
}

var sqsName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`) })

func (e *expander) sqs(s *SQSSpec) {
	e.m.SQS = &SQSModel{}
	seen := map[string]int{}
	addQ := func(q SQSQueue) {
		if i, ok := seen[q.Name]; ok {
			prev := e.m.SQS.Queues[i]
			if !reflect.DeepEqual(prev.Attributes, q.Attributes) || !reflect.DeepEqual(prev.DeadLetter, q.DeadLetter) {
				e.add(q.Pos, "sqs queue `%s` is declared twice with different settings (first at %s)", q.Name, prev.Pos)
			}
			return
		}
		seen[q.Name] = len(e.m.SQS.Queues)
		e.m.SQS.Queues = append(e.m.SQS.Queues, q)
	}
	dur := func(d time.Duration) *Duration { x := Duration(d); return &x }
	withDefaults := func(s SQSSettings, def SQSSettings) SQSSettings {
		if s.VisibilityTimeout == nil {
			s.VisibilityTimeout = def.VisibilityTimeout
		}
		if s.Retention == nil {
			s.Retention = def.Retention
		}
		if s.ReceiveWait == nil {
			s.ReceiveWait = def.ReceiveWait
		}
		if s.Delay == nil {
			s.Delay = def.Delay
		}
		return s
	}
	srcDefaults := SQSSettings{VisibilityTimeout: dur(30 * time.Second), Retention: dur(4 * 24 * time.Hour),
		ReceiveWait: dur(20 * time.Second), Delay: dur(0)}
	dlqDefaults := SQSSettings{VisibilityTimeout: dur(30 * time.Second), Retention: dur(14 * 24 * time.Hour),
		ReceiveWait: dur(20 * time.Second)}
	dlqName := func(name, own string) string {
		if own != "" {
			return own
		}
		if base, ok := strings.CutSuffix(name, ".fifo"); ok {
			return base + "-dlq.fifo"
		}
		return name + "-dlq"
	}
	mrc := func(n int) int {
		if n == 0 {
			return 5
		}
		return n
	}
	for _, p := range s.Pairs {
		from := "sqs pair " + p.Name
		dlq := dlqName(p.Name, p.DLQ)
		addQ(e.sqsQueue(dlq, withDefaults(p.DeadLetterQueue, dlqDefaults), nil,
			&SQSRedriveAllow{Permission: "byQueue", Sources: []string{p.Name}}, p.Pos, from))
		addQ(e.sqsQueue(p.Name, withDefaults(p.Source, srcDefaults),
			&SQSDeadLetter{Queue: dlq, MaxReceiveCount: mrc(p.MaxReceiveCount)}, nil, p.Pos, from))
	}
	for _, l := range s.RetryLadders {
		from := "sqs retry ladder " + l.Name
		dlq := dlqName(l.Name, l.DLQ)
		if len(l.Tiers) == 0 {
			e.add(l.Pos, "sqs retry ladder `%s` needs at least one tier", l.Name)
			continue
		}
		base, fifo := strings.CutSuffix(l.Name, ".fifo")
		sources := []string{l.Name}
		lad := SQSLadder{Main: e.name(l.Name), DLQ: e.name(dlq), Pos: l.Pos}
		var tierQueues []SQSQueue
		for i, t := range l.Tiers {
			d := t.D()
			if d <= 0 || d > 15*time.Minute {
				e.add(l.Pos, "sqs retry ladder `%s`: tier %d is %s; SQS delays are 1s to 15m", l.Name, i+1, FormatDuration(d))
			}
			lad.Delays = append(lad.Delays, d)
			name := base + "-retry-" + FormatDuration(d)
			if fifo {
				name += ".fifo"
			}
			sources = append(sources, name)
			st := withDefaults(l.Source, srcDefaults)
			st.Delay = &l.Tiers[i]
			tierQueues = append(tierQueues, e.sqsQueue(name, st, &SQSDeadLetter{Queue: dlq, MaxReceiveCount: mrc(l.MaxReceiveCount)}, nil, l.Pos, from))
			lad.Tiers = append(lad.Tiers, e.name(name))
		}
		if len(sources) > 10 {
			e.add(l.Pos, "sqs retry ladder `%s`: a DLQ's RedriveAllowPolicy names at most 10 sources; use fewer tiers", l.Name)
		}
		addQ(e.sqsQueue(dlq, withDefaults(l.DeadLetterQueue, dlqDefaults), nil, &SQSRedriveAllow{Permission: "byQueue", Sources: sources}, l.Pos, from))
		addQ(e.sqsQueue(l.Name, withDefaults(l.Source, srcDefaults), &SQSDeadLetter{Queue: dlq, MaxReceiveCount: mrc(l.MaxReceiveCount)}, nil, l.Pos, from))
		for _, q := range tierQueues {
			addQ(q)
		}
		e.m.SQS.Ladders = append(e.m.SQS.Ladders, lad)
	}
	for _, q := range s.Queues {
		addQ(e.sqsQueue(q.Name, q.SQSSettings, q.DeadLetter, q.RedriveAllow, q.Pos, ""))
	}
}

func (e *expander) sqsQueue(name string, s SQSSettings, dl *SQSDeadLetter, ra *SQSRedriveAllow, pos Pos, from string) SQSQueue {
	full := e.name(name)
	q := SQSQueue{Name: full, Attributes: map[string]string{}, Pos: pos, From: from}
	base, fifo := strings.CutSuffix(full, ".fifo")
	q.FIFO = fifo
	what := fmt.Sprintf("sqs queue `%s`", full)
	if !sqsName().MatchString(base) || len(full) > 80 {
		e.add(pos, "%s: SQS names are 1 to 80 letters, digits, - and _ (FIFO names end in .fifo)", what)
	}
	secs := func(field, attr string, d *Duration, lo, hi time.Duration) {
		if d == nil {
			return
		}
		v := d.D()
		if v%time.Second != 0 || v < lo || v > hi {
			e.add(pos, "%s: `%s` must be whole seconds from %s to %s, not %s", what, field, FormatDuration(lo), FormatDuration(hi), FormatDuration(v))
			return
		}
		q.Attributes[attr] = fmt.Sprint(int64(v / time.Second))
	}
	secs("visibility_timeout", "VisibilityTimeout", s.VisibilityTimeout, 0, 12*time.Hour)
	secs("retention", "MessageRetentionPeriod", s.Retention, time.Minute, 14*24*time.Hour)
	secs("receive_wait", "ReceiveMessageWaitTimeSeconds", s.ReceiveWait, 0, 20*time.Second)
	secs("delay", "DelaySeconds", s.Delay, 0, 15*time.Minute)
	if s.MaxMessageSize != nil {
		if *s.MaxMessageSize < 1024 || *s.MaxMessageSize > 1048576 {
			e.add(pos, "%s: `max_message_size` must be 1024 to 1048576 bytes", what)
		}
		q.Attributes["MaximumMessageSize"] = fmt.Sprint(*s.MaxMessageSize)
	}
	if fifo {
		q.Attributes["FifoQueue"] = "true"
	}
	if s.ContentBasedDeduplication != nil {
		if !fifo {
			e.add(pos, "%s: `content_based_deduplication` is for FIFO queues (names ending in .fifo)", what)
		}
		q.Attributes["ContentBasedDeduplication"] = fmt.Sprint(*s.ContentBasedDeduplication)
	}
	for k, v := range s.Attributes {
		switch k {
		case "RedrivePolicy", "RedriveAllowPolicy":
			e.add(pos, "%s: set %s with `dead_letter` / `redrive_allow`, which name queues rather than ARNs", what, k)
			continue
		case "QueueArn", "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
			"ApproximateNumberOfMessagesDelayed", "CreatedTimestamp", "LastModifiedTimestamp":
			e.add(pos, "%s: %s is read-only", what, k)
			continue
		}
		if old, ok := q.Attributes[k]; ok && old != v {
			e.add(pos, "%s: attribute %s=%s disagrees with the setting %s", what, k, v, old)
		}
		q.Attributes[k] = v
	}
	if dl != nil {
		if dl.MaxReceiveCount < 1 || dl.MaxReceiveCount > 1000 {
			e.add(pos, "%s: `max_receive_count` must be 1 to 1000", what)
		}
		q.DeadLetter = &SQSDeadLetter{Queue: e.name(dl.Queue), MaxReceiveCount: dl.MaxReceiveCount}
		if q.DeadLetter.Queue == full {
			e.add(pos, "%s dead-letters into itself: name another queue in `dead_letter.queue`", what)
		}
	}
	if ra != nil {
		r := &SQSRedriveAllow{Permission: ra.Permission}
		for _, s := range ra.Sources {
			r.Sources = append(r.Sources, e.name(s))
		}
		switch {
		case ra.Permission == "byQueue" && (len(ra.Sources) == 0 || len(ra.Sources) > 10):
			e.add(pos, "%s: `redrive_allow` byQueue needs 1 to 10 `sources`", what)
		case ra.Permission != "byQueue" && len(ra.Sources) > 0:
			e.add(pos, "%s: `redrive_allow.sources` needs `permission: byQueue`", what)
		}
		q.RedriveAllow = r
	}
	return q
}

// expandSQS expands the spec's `sqs:` section, if any.
func expandSQS(e *expander) bool {
	if e.spec.SQS == nil {
		return false
	}
	e.sqs(e.spec.SQS)
	return true
}
