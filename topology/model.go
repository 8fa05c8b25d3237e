package topology

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/dlq-tools/dlq/broker"
)

// Model is a spec expanded into the objects a broker holds: every
// high-level construct replaced by its exchanges, queues, bindings, policies
// and SQS queues, every default filled in, every name prefixed.
type Model struct {
	File   string
	Prefix string
	Rabbit *RabbitModel
	SQS    *SQSModel
	// Ignore is the lint rules the spec silences.
	Ignore []string
}

const (
	defaultPolicyPriority = 10
	maxTTL                = math.MaxUint32 // RabbitMQ's x-message-ttl limit, in ms
)

type expander struct {
	spec     *Spec
	m        *Model
	problems []Problem
	exIdx    map[string]int
	qIdx     map[string]int
	polIdx   map[string]int
	bindSeen map[string]bool
}

func (e *expander) add(p Pos, format string, args ...any) {
	if p.File == "" {
		p.File = e.spec.File
	}
	e.problems = append(e.problems, Problem{Pos: p, Msg: fmt.Sprintf(format, args...)})
}

// name applies the spec's name_prefix, except to the default exchange and
// the built-in amq.* exchanges.
func (e *expander) name(n string) string {
	if n == "" || strings.HasPrefix(n, "amq.") {
		return n
	}
	return e.spec.NamePrefix + n
}

// Expand turns a parsed spec into a model. Problems that need more than the
// schema (duplicate names with different settings, impossible settings) are
// a *SpecError.
func Expand(s *Spec) (*Model, error) {
	e := &expander{spec: s, m: &Model{File: s.File, Prefix: s.NamePrefix},
		exIdx: map[string]int{}, qIdx: map[string]int{}, polIdx: map[string]int{}, bindSeen: map[string]bool{}}
	if s.Lint != nil {
		e.m.Ignore = s.Lint.Ignore
	}
	if s.Version != SpecVersion {
		e.add(Pos{Line: 1, Col: 1}, "`version: %d` is required", SpecVersion)
	}
	declared := false
	for _, t := range systems {
		if t.Expand(e) {
			declared = true
		}
	}
	if !declared {
		secs := make([]string, len(systems))
		for i, t := range systems {
			secs[i] = "`" + t.Section + ":`"
		}
		e.add(Pos{Line: 1, Col: 1}, "spec declares nothing: add a %s section", orList(secs))
	}
	if len(e.problems) > 0 {
		sort.SliceStable(e.problems, func(i, j int) bool { return e.problems[i].Pos.Line < e.problems[j].Pos.Line })
		return nil, &SpecError{Problems: e.problems}
	}
	return e.m, nil
}

// Load parses, validates and expands a spec file.
func Load(path string) (*Model, error) {
	s, err := ParseFile(path)
	if err != nil {
		return nil, err
	}
	return Expand(s)
}

// LoadBytes parses, validates and expands a spec held in memory.
func LoadBytes(file string, data []byte) (*Model, error) {
	s, err := Parse(file, data)
	if err != nil {
		return nil, err
	}
	return Expand(s)
}

// ---- values ----

// normalizeTable returns a copy of t with every number as int64 (when whole)
// or float64, so that values from YAML, JSON and the brokers compare equal.
func normalizeTable(t map[string]any) map[string]any {
	if t == nil {
		return nil
	}
	out := make(map[string]any, len(t))
	for k, v := range t {
		out[k] = normalizeValue(v)
	}
	return out
}

func normalizeValue(v any) any {
	if n, ok := broker.Int64(v); ok {
		return n
	}
	switch x := v.(type) {
	case uint64: // YAML's integers past the int64 range
		return float64(x)
	case float32:
		return float64(x)
	case map[string]any:
		return normalizeTable(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeValue(e)
		}
		return out
	default:
		return v
	}
}

// canonical renders a normalized value deterministically, for keys and
// comparisons.
func canonical(v any) string {
	switch x := normalizeValue(v).(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%q:%s", k, canonical(x[k]))
		}
		b.WriteByte('}')
		return b.String()
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = canonical(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case string:
		return fmt.Sprintf("%q", x)
	case nil:
		return "null"
	default:
		return fmt.Sprint(x)
	}
}

func equalValues(a, b any) bool { return canonical(a) == canonical(b) }
