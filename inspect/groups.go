package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/dlq-tools/dlq/broker"
)

// RedriveHeader is the header (SQS: message attribute) in which a redrive
// records {count, time, source, id} on each message it moves.
const RedriveHeader = "x-dlq-redrive"

// Redrives is how many times dlq redrove m, from its x-dlq-redrive record
// (a table on RabbitMQ, a JSON string on SQS and in archives); 0 without
// one.
func Redrives(m *broker.Message) int64 {
	var raw string
	if v, ok := m.Headers[RedriveHeader]; ok {
		switch t := v.(type) {
		case map[string]any:
			n, _ := broker.Int64(t["count"])
			return n
		case string:
			raw = t
		case []byte:
			raw = string(t)
		}
	} else if a, ok := m.Attributes[RedriveHeader]; ok {
		raw = a.StringValue
	}
	if raw == "" {
		return 0
	}
	var rec struct {
		Count int64 `json:"count"`
	}
	if json.Unmarshal([]byte(raw), &rec) != nil {
		return 0
	}
	return rec.Count
}

// ErrUnknownGroup is returned for a group ID that no message of the queue
// has.
var ErrUnknownGroup = errors.New("unknown group")

// UnknownGroupError names the group IDs that matched no group.
type UnknownGroupError struct {
	IDs   []string
	Queue string
}

func (e *UnknownGroupError) Error() string {
	return fmt.Sprintf("no group %s in %s", strings.Join(e.IDs, ", "), e.Queue)
}

func (e *UnknownGroupError) Unwrap() error { return ErrUnknownGroup }

// GroupSelector selects messages by group ID: a message is selected when
// the ID of its own reason shape is one of the IDs, or when its shape
// matches a mined template whose ID is one of them. Templates come from
// Resolve, which reads the queue once; until then only the first rule
// applies.
type GroupSelector struct {
	ids       map[string]bool
	list      []string
	templates []string
	reason    ReasonFunc
}

// NewGroupSelector selects the groups with these IDs (case-insensitive)
// by the default failure reason (reason nil) or reason.
func NewGroupSelector(ids []string, reason ReasonFunc) *GroupSelector {
	g := &GroupSelector{ids: map[string]bool{}, reason: reason}
	for _, id := range ids {
		id = strings.ToLower(strings.TrimSpace(id))
		if id != "" && !g.ids[id] {
			g.ids[id] = true
			g.list = append(g.list, id)
		}
	}
	return g
}

// IDs are the selected group IDs, in the order given.
func (g *GroupSelector) IDs() []string { return g.list }

func (g *GroupSelector) shape(ctx context.Context, m *broker.Message) (string, error) {
	r := ""
	if g.reason != nil {
		var err error
		if r, err = g.reason(ctx, m); err != nil {
			return "", err
		}
	} else {
		r = Reason(m)
	}
	return ShapeOf(orDefault(r, Unknown)), nil
}

// Match reports whether m belongs to one of the selected groups.
func (g *GroupSelector) Match(ctx context.Context, m *broker.Message) (bool, error) {
	sh, err := g.shape(ctx, m)
	if err != nil {
		return false, err
	}
	return g.matchShape(sh), nil
}

func (g *GroupSelector) matchShape(sh string) bool {
	if g.ids[GroupID(sh)] {
		return true
	}
	for _, t := range g.templates {
		if MatchTemplate(t, sh) {
			return true
		}
	}
	return false
}

// Resolve reads queue through p (a peek: nothing is removed) to mine its
// templates, keeps those whose IDs are selected, and returns an
// UnknownGroupError for IDs that are neither a template's nor a shape's.
// maxShapes bounds the distinct shapes kept (default 10,000), as Stats'
// MaxGroups does.
func (g *GroupSelector) Resolve(ctx context.Context, p broker.Peeker, queue string, opts broker.PeekOptions, maxShapes int) (broker.PeekReport, error) {
	if maxShapes <= 0 {
		maxShapes = 10000
	}
	shapes := map[string]bool{}
	peek := p.Peek
	if rp, ok := p.(ReusingPeeker); ok {
		peek = rp.PeekReused
	}
	rep, err := peek(ctx, queue, opts, func(m *broker.Message) (err error) {
		defer broker.Recover(m.ID, &err)
		if err := ctx.Err(); err != nil {
			return err
		}
		sh, err := g.shape(ctx, m)
		if err != nil {
			return err
		}
		if len(shapes) < maxShapes {
			shapes[sh] = true
		}
		return nil
	})
	if errors.Is(err, broker.ErrStop) {
		err = nil
	}
	if err != nil {
		return rep, err
	}
	list := make([]string, 0, len(shapes))
	for sh := range shapes {
		list = append(list, sh)
	}
	g.Learn(Mine(list))
	return rep, g.Check(queue, list)
}

// Learn keeps the templates of tm whose IDs are selected.
func (g *GroupSelector) Learn(tm Templates) {
	seen := map[string]bool{}
	g.templates = g.templates[:0]
	for _, t := range tm {
		if g.ids[GroupID(t)] && !seen[t] && strings.Contains(t, PhAny) {
			seen[t] = true
			g.templates = append(g.templates, t)
		}
	}
	sort.Strings(g.templates)
}

// Check returns an UnknownGroupError for the IDs that are neither one of
// shapes' nor one of the learnt templates'.
func (g *GroupSelector) Check(queue string, shapes []string) error {
	known := map[string]bool{}
	for _, sh := range shapes {
		known[GroupID(sh)] = true
	}
	for _, t := range g.templates {
		known[GroupID(t)] = true
	}
	var missing []string
	for _, id := range g.list {
		if !known[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return &UnknownGroupError{IDs: missing, Queue: queue}
	}
	return nil
}
