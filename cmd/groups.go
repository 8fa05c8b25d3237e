package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
)

// groupFlag is `--group ID` (repeatable): select the messages of failure
// groups, by the IDs `dlq stats` shows.
type groupFlag struct {
	IDs []string
	sel *inspect.GroupSelector
}

func (g *groupFlag) register(c *cobra.Command, what string) {
	c.Flags().StringSliceVar(&g.IDs, "group", nil, what+" only the messages of failure group `ID` (as dlq stats QUEUE shows them); repeat or separate with commas")
}

// validate checks the IDs and builds the selector (reason nil: the default
// failure reason).
func (g *groupFlag) validate(reason inspect.ReasonFunc) error {
	if len(g.IDs) == 0 {
		return nil
	}
	for i, id := range g.IDs {
		id = strings.ToLower(strings.TrimSpace(id))
		if len(id) != 10 || strings.Trim(id, "0123456789abcdef") != "" {
			return flagErrorf("`--group %s` is not a group ID: IDs are 10 hex digits, as `dlq stats QUEUE --group-by reason` shows", g.IDs[i])
		}
		g.IDs[i] = id
	}
	g.sel = inspect.NewGroupSelector(g.IDs, reason)
	return nil
}

// resolve reads queue once without removing anything (a peek, as stats
// reads) to learn which templates the IDs name, and fails with a one-line
// error for an ID that no message has. With keep it keeps what it read and
// returns it (nil when the queue is too large to keep), for the command's
// next look at the queue (a preview, a dry run), which then says what the
// read changed.
func (g *groupFlag) resolve(ctx context.Context, f *Factory, b broker.Broker, queue, shown string, po broker.PeekOptions, keep bool) (*keptRead, error) {
	if g.sel == nil {
		return nil, nil
	}
	p, ok := b.(broker.Peeker)
	if !ok {
		return nil, flagErrorf("`--group` needs to read `%s` first, and %s cannot read messages without removing them: select with `--filter '.group == \"ID\"'` instead", shown, broker.Redact(b.String()))
	}
	var kept *keptRead
	if keep {
		kept = &keptRead{}
		p = keepingPeeker{p, kept}
	}
	if f.IO.IsStderrTTY() {
		what := "to find its failure groups"
		if keep {
			what = "once to find its failure groups and the messages they hold"
		}
		f.IO.Statusf("dlq: reading `%s` %s (%s)…", shown, what, readingNote(ctx, b, queue))
	}
	rep, err := g.sel.Resolve(ctx, p, queue, fullRead(ctx, b, queue, po), 0)
	var ue *inspect.UnknownGroupError
	if errors.As(err, &ue) && len(ue.IDs) == len(g.IDs) {
		// One line: what was selected, and what the read changed.
		return nil, nothingSelected{fmt.Sprintf("no message of `%s` is in group %s (list its groups with `dlq stats %s --group-by reason`)", shown, strings.Join(ue.IDs, " or "), shown), rep.Changed}
	}
	if kept != nil && kept.full {
		f.IO.Statusf("dlq: `%s` holds more than %d MiB, too much to keep: it is read a second time to look at the groups' messages", shown, keepMax>>20)
		kept = nil
	}
	if kept != nil {
		kept.rep = rep
	} else if rep.Changed != "" {
		f.IO.Statusf("%s", rep.Changed)
	}
	if err != nil {
		kept = nil
	}
	if errors.As(err, &ue) {
		noun := "group"
		if len(ue.IDs) > 1 {
			noun = "groups"
		}
		return nil, flagErrorf("no message of `%s` is in %s %s: list its groups with `dlq stats %s --group-by reason`", shown, noun, strings.Join(ue.IDs, ", "), shown)
	}
	if err != nil {
		return nil, suggestQueue(ctx, b, queue, fmt.Errorf("find failure groups: %w", err))
	}
	return kept, nil
}

// keepMax bounds the bytes a keptRead holds (bodies, and an allowance for
// each message's headers and properties); a variable for the tests.
var keepMax = 256 << 20

// keptRead is a read of a queue kept in memory, so that a command's next
// look at the queue is not a second read: on RabbitMQ each whole read
// rotates every message, and on SQS it raises every receive count.
type keptRead struct {
	msgs []*broker.Message
	rep  broker.PeekReport
	size int
	// full: the read held more than keepMax; nothing is kept.
	full bool
}

func (k *keptRead) keep(m *broker.Message) {
	if k.full {
		return
	}
	if k.size += m.Size() + 1024; k.size > keepMax {
		k.full, k.msgs = true, nil
		return
	}
	k.msgs = append(k.msgs, m.Clone())
}

// Peek visits the kept messages in the order they were read, and reports
// what the read reported; opts are those of the read.
func (k *keptRead) Peek(ctx context.Context, queue string, opts broker.PeekOptions, visit func(*broker.Message) error) (broker.PeekReport, error) {
	for _, m := range k.msgs {
		if err := ctx.Err(); err != nil {
			return k.rep, err
		}
		if err := visit(m); err != nil {
			return k.rep, err
		}
	}
	return k.rep, nil
}

// keepingPeeker keeps a copy of each message its Peeker visits.
type keepingPeeker struct {
	p    broker.Peeker
	kept *keptRead
}

func (k keepingPeeker) Peek(ctx context.Context, queue string, opts broker.PeekOptions, visit func(*broker.Message) error) (broker.PeekReport, error) {
	return k.p.Peek(ctx, queue, opts, func(m *broker.Message) error {
		if err := visit(m); err != nil {
			return err
		}
		k.kept.keep(m)
		return nil
	})
}

// readFrom is what a dry run reads: the kept read, or the source (nil).
func (k *keptRead) readFrom() broker.Peeker {
	if k == nil {
		return nil
	}
	return k
}

// groupFilter is a redrive filter: the jq filter (if any) and the groups.
type groupFilter struct {
	q   *inspect.Query
	sel *inspect.GroupSelector
}

func (g groupFilter) Match(ctx context.Context, m *broker.Message) (bool, error) {
	if g.q != nil {
		ok, err := g.q.Match(ctx, m)
		if err != nil || !ok {
			return ok, err
		}
	}
	return g.sel.Match(ctx, m)
}

// query is the jq part, for warnings about paths it reads.
func (g groupFilter) query() *inspect.Query { return g.q }

// nothingSelected ends a command whose selection matched no message before
// anything was taken: not an error (exit 0), said on one line.
// changed is what reading the queue to select changed, if anything.
type nothingSelected struct{ what, changed string }

func (e nothingSelected) Error() string {
	if e.changed != "" {
		return e.what + "; no message was moved or removed, but reading the queue changed it: " + e.changed
	}
	return e.what + "; nothing was changed"
}

// endNothingSelected says that err's selection matched nothing, with an
// empty summary for -o json, and ends the command with exit 0; other
// errors are returned as they are.
func endNothingSelected(f *Factory, format string, err error, empty any) error {
	var ns nothingSelected
	if !errors.As(err, &ns) {
		return err
	}
	f.IO.Statusf("%s", ns.Error())
	if format == OutputJSON {
		return writeJSON(f.IO.Out, empty)
	}
	return nil
}
