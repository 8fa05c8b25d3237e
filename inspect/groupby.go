package inspect

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// The --group-by list: its parser (ParseGroupBy) and the value each
// grouping gives a message (Stats.value, Classify).

// Grouping is one dimension of a group-by list.
type Grouping struct {
	// Kind is reason (the reason's shape), reason-text (its exact text),
	// redrives, source, exchange, routing-key, framework, failure.type,
	// failure.consumer, failure.message-type, header, attr, body, age, day
	// or hour.
	Kind string
	// Arg is the header or attribute name, or the body path.
	Arg string

	path  []string // body: a simple .a.b path, scanned without decoding
	query *Query   // body: any other jq path, over .body
}

// Name is the grouping as written ("header:x-tenant").
func (g Grouping) Name() string {
	if g.Arg == "" {
		return g.Kind
	}
	return g.Kind + ":" + g.Arg
}

// GroupKinds lists what a group-by list accepts.
const GroupKinds = "reason, reason-text, redrives, source, exchange, routing-key, framework, failure.type, failure.consumer, failure.message-type, header:NAME, attr:NAME, body:.json.path, age, day, hour"

var simplePath = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\.[A-Za-z_][A-Za-z0-9_-]*)+$`) })

// ParseGroupBy parses a comma-separated group-by list.
func ParseGroupBy(spec string) ([]Grouping, error) {
	var out []Grouping
	seen := map[string]bool{}
	for _, part := range splitGroupBy(spec) {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		kind, arg, hasArg := strings.Cut(part, ":")
		kind = strings.ToLower(strings.TrimSpace(kind))
		g := Grouping{Kind: kind, Arg: arg}
		switch kind {
		case "reason", "reason-text", "redrives", "source", "exchange", "routing-key", "age", "day", "hour",
			"framework", "failure.type", "failure.consumer", "failure.message-type":
			if hasArg {
				return nil, fmt.Errorf("group %q takes no argument: use %q", part, kind)
			}
		case "routing_key", "routingkey":
			g.Kind = "routing-key"
		case "reason_text", "text":
			g.Kind = "reason-text"
		case "redrive":
			g.Kind = "redrives"
		case "failure.framework":
			g.Kind = "framework"
		case "failure.exception_type", "failure.exception-type":
			g.Kind = "failure.type"
		case "failure.message_type":
			g.Kind = "failure.message-type"
		case "header", "attr":
			if strings.TrimSpace(arg) == "" {
				return nil, fmt.Errorf("group %q needs a name: use %s:NAME", part, kind)
			}
		case "body":
			arg = strings.TrimSpace(arg)
			g.Arg = arg
			switch {
			case arg == "":
				return nil, fmt.Errorf("group %q needs a path: use body:.field.subfield", part)
			case simplePath().MatchString(arg):
				g.path = strings.Split(arg[1:], ".")
			default:
				q, err := Compile(".body | (" + arg + ")")
				if err != nil {
					return nil, fmt.Errorf("group %q: %w", part, err)
				}
				g.query = q
			}
		default:
			return nil, fmt.Errorf("unknown group %q: use any of %s", part, GroupKinds)
		}
		if seen[g.Name()] {
			continue
		}
		seen[g.Name()] = true
		out = append(out, g)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty group list: use any of %s", GroupKinds)
	}
	return out, nil
}

// splitGroupBy splits on commas that are not inside brackets or quotes, so
// that body:.["a,b"] stays one group.
func splitGroupBy(s string) []string {
	var out []string
	depth, start := 0, 0
	inStr := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '[' || c == '(' || c == '{':
			depth++
		case c == ']' || c == ')' || c == '}':
			depth--
		case c == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func (s *Stats) value(ctx context.Context, g Grouping, m *broker.Message, t time.Time, getDoc func() map[string]any) (string, error) {
	switch g.Kind {
	case "reason", "reason-text":
		r, err := s.reason(ctx, m)
		if err != nil {
			return "", err
		}
		if r == "" {
			return Unknown, nil
		}
		if g.Kind == "reason-text" {
			return r, nil
		}
		s.shaper.shape(r)
		s.shapeOK = placeholderCount(s.shaper.out) == len(s.shaper.vals)
		return s.intern(s.shaper.out), nil
	case "redrives":
		return strconv.FormatInt(Redrives(m), 10), nil
	case "source":
		return orDefault(s.opts.Source.Of(ctx, m), Unknown), nil
	case "exchange":
		if m.Death != nil && m.Death.Exchange != "" {
			return m.Death.Exchange, nil
		}
		if f := s.failure(m); f != nil && f.Origin != nil && f.Origin.Exchange != "" {
			return f.Origin.Exchange, nil
		}
		return orDefault(m.Exchange, NoValue), nil
	case "routing-key":
		if m.Death != nil && len(m.Death.RoutingKeys) > 0 {
			return strings.Join(m.Death.RoutingKeys, ","), nil
		}
		if f := s.failure(m); f != nil && f.Origin != nil && f.Origin.RoutingKey != "" {
			return f.Origin.RoutingKey, nil
		}
		return orDefault(m.RoutingKey, NoValue), nil
	case "framework", "failure.type", "failure.consumer", "failure.message-type":
		f := s.failure(m)
		if f == nil {
			return NoValue, nil
		}
		v := f.Framework
		switch g.Kind {
		case "failure.type":
			v = f.ExceptionType
		case "failure.consumer":
			v = f.Consumer
		case "failure.message-type":
			v = f.MessageType
		}
		return orDefault(clean(v), NoValue), nil
	case "header":
		v, ok := m.Headers[g.Arg]
		if !ok {
			return NoValue, nil
		}
		return orDefault(clean(ValueText(jqValue(v))), NoValue), nil
	case "attr":
		if a, ok := m.Attributes[g.Arg]; ok {
			if a.BinaryValue != nil {
				return orDefault(clean(ValueText(jqValue(a.BinaryValue))), NoValue), nil
			}
			return orDefault(clean(a.StringValue), NoValue), nil
		}
		if v, ok := m.SystemAttributes[g.Arg]; ok {
			return orDefault(clean(v), NoValue), nil
		}
		return NoValue, nil
	case "body":
		if g.path != nil {
			raw := jsonField(innerBody(m), g.path)
			if raw == nil {
				return NoValue, nil
			}
			return orDefault(clean(rawText(raw)), NoValue), nil
		}
		v, ok, err := g.query.First(ctx, getDoc())
		if err != nil || !ok {
			return NoValue, nil
		}
		return orDefault(clean(ValueText(v)), NoValue), nil
	case "age":
		if t.IsZero() {
			return Unknown, nil
		}
		return AgeBucket(s.opts.Now.Sub(t)), nil
	case "day":
		if t.IsZero() {
			return Unknown, nil
		}
		return t.UTC().Format("2006-01-02"), nil
	case "hour":
		if t.IsZero() {
			return Unknown, nil
		}
		return t.UTC().Format("2006-01-02T15Z"), nil
	}
	return "", fmt.Errorf("unknown group %q", g.Kind)
}

// AgeBuckets are the values of the age grouping, youngest first.
var AgeBuckets = []string{"<1m", "<1h", "<1d", "<7d", "older"}

// AgeBucket names the age bucket of d.
func AgeBucket(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "<1m"
	case d < time.Hour:
		return "<1h"
	case d < 24*time.Hour:
		return "<1d"
	case d < 7*24*time.Hour:
		return "<7d"
	default:
		return "older"
	}
}

// Classify returns the values of m's group in the last Result (templates
// in place of shapes), or nil when m is not counted (Window, Filter or
// Groups leave it out). Values of groups beyond MaxGroups are those of
// the group m would have had.
func (s *Stats) Classify(ctx context.Context, m *broker.Message) ([]string, error) {
	if !s.opts.Window.Admits(m, s.opts.Now) {
		return nil, nil
	}
	if s.opts.Filter != nil {
		ok, err := s.opts.Filter.Match(ctx, m)
		if err != nil || !ok {
			return nil, err
		}
	}
	if s.opts.Groups != nil {
		ok, err := s.opts.Groups.Match(ctx, m)
		if err != nil || !ok {
			return nil, err
		}
	}
	t := deadTime(m)
	var doc map[string]any
	getDoc := func() map[string]any {
		if doc == nil {
			doc = DocumentAt(m, s.opts.Now)
		}
		return doc
	}
	out := make([]string, len(s.opts.GroupBy))
	for i, g := range s.opts.GroupBy {
		v, err := s.value(ctx, g, m, t, getDoc)
		if err != nil {
			return nil, err
		}
		if i == s.reasonAt {
			if tm, ok := s.tmpl[v]; ok {
				v = tm
			}
		}
		out[i] = v
	}
	return out, nil
}
