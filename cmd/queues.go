package cmd

import (
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/broker"
)

type queuesOptions struct {
	f       *Factory
	Pattern string
	DLQOnly bool
	Sort    string
}

// One piece, though long: `dlq queues` and its table, whose columns, notes
// and warnings are the command's whole output.

// Sort orders of `dlq queues`.
const (
	sortAttention = "attention"
	sortName      = "name"
	sortDepth     = "depth"
)

func newCmdQueues(f *Factory, runF func(*queuesOptions) error) *cobra.Command {
	opts := &queuesOptions{f: f}
	c := &cobra.Command{
		Use:   "queues [PATTERN]",
		Short: "Health snapshot of every queue: depth, in flight, consumers, DLQs",
		Long: `List every queue of the broker with its depth (ready messages), messages
in flight (unacknowledged on RabbitMQ, not visible on SQS), consumers,
consumer capacity (RabbitMQ) or delayed messages (SQS), the age of the oldest
message where the broker knows it, and the dead-letter relations: which queue
each queue dead-letters to, and which queues dead-letter into each DLQ.

Each queue has a ROLE:
  work     a queue applications consume
  retry    a delay step of a retry ladder: a RabbitMQ queue whose messages
           expire back towards a work queue (a message TTL; or per-message
           TTLs when its name says retry, delay, wait or backoff), or an
           SQS delay queue named so (orders-retry-30s)
  dlq      a dead-letter queue: another queue dead-letters into it (a
           dead-letter exchange argument or policy, an SQS RedrivePolicy
           or RedriveAllowPolicy), a retry queue's expiry not counting
  parking  the last stop: a queue only dead-letter queues feed, or a DLQ
           named parking, parking-lot or graveyard
A queue that nothing dead-letters into is a dlq (or parking) when its name
follows a convention: its last word is dlq, dead, dead-letter, error or
errors (MassTransit's _error, NServiceBus's error), poison, dlx or dl, or
its first word is dlq or dead-letter; words are split at . - _ and case
changes, so terror-events and error-events are work queues. The table
marks such roles with * (JSON: "role_source": "name"). "is_dlq" is true
exactly for dlq and parking, and --dlq-only shows those.

By default DLQs that hold messages come first, deepest first; then every
other queue by name.

PATTERN filters by name: a glob (orders.*, *-dlq) or else a substring.`,
		Example: `  dlq queues --broker amqp://ops@rabbit:5672/shop
  dlq queues --context prod-sqs --dlq-only
  dlq queues --broker demo: 'orders*'
  dlq queues --output json | jq '.[] | select(.is_dlq and .depth > 0) | .name'
  dlq queues --jq '.[] | select(.role == "retry") | .name'`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeQueueArg(f),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Pattern = args[0]
			}
			switch opts.Sort {
			case sortAttention, sortName, sortDepth:
			default:
				return flagErrorf("unknown `--sort` %q: use attention, name or depth", opts.Sort)
			}
			if opts.Pattern != "" {
				if _, err := path.Match(opts.Pattern, ""); err != nil {
					return flagErrorf("malformed pattern %q: %v", opts.Pattern, err)
				}
			}
			if runF != nil {
				return runF(opts)
			}
			return queuesRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.DLQOnly, "dlq-only", false, "show only dead-letter queues")
	c.Flags().StringVar(&opts.Sort, "sort", sortAttention, "order: attention (DLQs with messages first), name, depth")
	_ = c.RegisterFlagCompletionFunc("sort", choices(sortAttention, sortName, sortDepth))
	addOutputFlags(c, f, OutputTable, OutputJSON, OutputCSV)
	return c
}

func queuesRun(ctx context.Context, opts *queuesOptions) error {
	f := opts.f
	format, err := outputFormat(f, OutputTable, OutputJSON, OutputCSV)
	if err != nil {
		return err
	}
	b, err := f.OpenBroker(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	lister, ok := b.(broker.QueueLister)
	if !ok {
		return fmt.Errorf("%s cannot list queues", b.String())
	}
	lctx, cancel := context.WithTimeout(ctx, f.timeout())
	defer cancel()
	qs, err := lister.Queues(lctx)
	if err != nil {
		if lctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return fmt.Errorf("list queues on %s: no answer within %s: raise `--timeout`", b.String(), f.timeout())
		}
		return err
	}
	qs = filterQueues(qs, opts.Pattern, opts.DLQOnly)
	sortQueues(qs, opts.Sort)
	if w := dropWarning(qs); w != "" {
		f.IO.Statusf("%s", w)
	}

	switch format {
	case OutputJSON:
		out := make([]queueJSON, len(qs))
		for i := range qs {
			out[i] = toQueueJSON(&qs[i])
		}
		return writeJSON(f.IO.Out, out)
	case OutputCSV:
		return queuesTable(qs, true).RenderCSV(f.IO.Out)
	}
	if len(qs) == 0 {
		what := "queues"
		if opts.DLQOnly {
			what = "dead-letter queues"
		}
		if opts.Pattern != "" {
			what += " matching " + strconv.Quote(opts.Pattern)
		}
		f.IO.Statusf("no %s on %s", what, b.String())
		return nil
	}
	if err := renderQueues(f.IO.Out, qs, f.IO.ColorEnabled(), f.IO.IsStdoutTTY()); err != nil {
		return err
	}
	for i := range qs {
		if qs[i].RoleSource == broker.RoleFromName {
			f.IO.Statusf("%s", nameMarkNote)
			break
		}
	}
	return nil
}

func filterQueues(qs []broker.Queue, pattern string, dlqOnly bool) []broker.Queue {
	glob := strings.ContainsAny(pattern, "*?[")
	out := qs[:0]
	for _, q := range qs {
		if dlqOnly && !q.IsDLQ {
			continue
		}
		if pattern != "" {
			if glob {
				if ok, _ := path.Match(pattern, q.Name); !ok {
					continue
				}
			} else if !strings.Contains(q.Name, pattern) {
				continue
			}
		}
		out = append(out, q)
	}
	return out
}

func needsAttention(q *broker.Queue) bool { return q.IsDLQ && q.Depth > 0 }

func sortQueues(qs []broker.Queue, by string) {
	sort.SliceStable(qs, func(i, j int) bool {
		a, b := &qs[i], &qs[j]
		switch by {
		case sortDepth:
			if a.Depth != b.Depth {
				return a.Depth > b.Depth
			}
		case sortAttention:
			if na, nb := needsAttention(a), needsAttention(b); na != nb {
				return na
			} else if na && a.Depth != b.Depth {
				return a.Depth > b.Depth
			}
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Vhost < b.Vhost
	})
}

// queueJSON is a queue as `--output json` prints it: ages in seconds.
type queueJSON struct {
	Name                 string         `json:"name"`
	System               broker.System  `json:"system"`
	Kind                 string         `json:"kind"`
	Vhost                string         `json:"vhost,omitempty"`
	URL                  string         `json:"url,omitempty"`
	ARN                  string         `json:"arn,omitempty"`
	Depth                int64          `json:"depth"`
	InFlight             *int64         `json:"in_flight"`
	Delayed              *int64         `json:"delayed,omitempty"`
	Consumers            *int64         `json:"consumers"`
	ConsumerCapacity     *float64       `json:"consumer_capacity,omitempty"`
	OldestAgeSeconds     *float64       `json:"oldest_age_seconds"`
	Bytes                *int64         `json:"bytes,omitempty"`
	IsDLQ                bool           `json:"is_dlq"`
	Role                 broker.Role    `json:"role"`
	RoleSource           string         `json:"role_source"`
	MessageTTLSeconds    *float64       `json:"message_ttl_seconds,omitempty"`
	DeliveryDelaySeconds *float64       `json:"delivery_delay_seconds,omitempty"`
	DeadLetterTarget     string         `json:"dead_letter_target,omitempty"`
	DeadLetterRoutingKey string         `json:"dead_letter_routing_key,omitempty"`
	DeadLetterQueues     []string       `json:"dead_letter_queues,omitempty"`
	DeadLetterSources    []string       `json:"dead_letter_sources,omitempty"`
	DeliveryLimit        int64          `json:"delivery_limit,omitempty"`
	DeliveryLimitDefault bool           `json:"delivery_limit_default,omitempty"`
	DropsAfter           int64          `json:"drops_after,omitempty"`
	Policy               string         `json:"policy,omitempty"`
	Durable              bool           `json:"durable,omitempty"`
	Arguments            map[string]any `json:"arguments,omitempty"`
	Leader               string         `json:"leader,omitempty"`
	Members              []string       `json:"members,omitempty"`
	Online               []string       `json:"online,omitempty"`
}

func toQueueJSON(q *broker.Queue) queueJSON {
	j := queueJSON{
		Name: q.Name, System: q.System, Kind: string(q.Kind), Vhost: q.Vhost, URL: q.URL, ARN: q.ARN,
		Depth: q.Depth, InFlight: q.InFlight, Delayed: q.Delayed, Consumers: q.Consumers,
		ConsumerCapacity: q.ConsumerCapacity, Bytes: q.Bytes, IsDLQ: q.IsDLQ,
		DeadLetterTarget: q.DeadLetterTarget, DeadLetterRoutingKey: q.DeadLetterRoutingKey,
		DeadLetterQueues: q.DeadLetterQueues, DeadLetterSources: q.DeadLetterSources,
		DeliveryLimit: q.DeliveryLimit, DeliveryLimitDefault: q.DeliveryLimitDefault, DropsAfter: q.DropsAfter,
		Policy: q.Policy, Durable: q.Durable, Arguments: q.Arguments,
		Leader: q.Leader, Members: q.Members, Online: q.Online,
	}
	if q.OldestAge != nil {
		s := q.OldestAge.Seconds()
		j.OldestAgeSeconds = &s
	}
	seconds := func(d time.Duration) *float64 {
		if d <= 0 {
			return nil
		}
		s := d.Seconds()
		return &s
	}
	j.Role, j.RoleSource = q.Role, string(q.RoleSource)
	j.MessageTTLSeconds, j.DeliveryDelaySeconds = seconds(q.MessageTTL), seconds(q.DeliveryDelay)
	return j
}

// queuesTable builds the rows; csv keeps machine-readable values and
// every column.
func queuesTable(qs []broker.Queue, csv bool) *Table {
	t := NewTable("NAME", "KIND", "DEPTH", "IN FLIGHT", "CONSUMERS", "CAPACITY", "DELAYED", "OLDEST", "ROLE", "DEAD LETTERS TO", "DEAD LETTERS FROM", "MEMBERS", "NOTES")
	if csv {
		t = NewTable("NAME", "KIND", "DEPTH", "IN FLIGHT", "CONSUMERS", "CAPACITY", "DELAYED", "OLDEST SECONDS", "DLQ", "DEAD LETTERS TO", "DEAD LETTERS FROM", "VHOST", "URL",
			"LEADER", "MEMBERS", "ONLINE", "DELIVERY LIMIT", "DROPS AFTER", "ROLE", "ROLE SOURCE")
	}
	short := nodeNamer(qs)
	num := func(p *int64) string {
		if p == nil {
			if csv {
				return ""
			}
			return "-"
		}
		return strconv.FormatInt(*p, 10)
	}
	for i := range qs {
		q := &qs[i]
		capacity, oldest := "-", "-"
		if csv {
			capacity, oldest = "", ""
		}
		if q.ConsumerCapacity != nil {
			if csv {
				capacity = strconv.FormatFloat(*q.ConsumerCapacity, 'f', -1, 64)
			} else {
				capacity = strconv.Itoa(int(*q.ConsumerCapacity*100+0.5)) + "%"
			}
		}
		if q.OldestAge != nil {
			if csv {
				oldest = strconv.FormatFloat(q.OldestAge.Seconds(), 'f', 0, 64)
			} else {
				oldest = spanAge(*q.OldestAge)
			}
		}
		dlq := roleCell(q)
		if csv {
			dlq = "no"
			if q.IsDLQ {
				dlq = "yes"
			}
		}
		to := deadLetterTo(q)
		sep := ", "
		if csv {
			sep = ";"
		}
		from := strings.Join(q.DeadLetterSources, sep)
		if !csv {
			if to == "" {
				to = "-"
			}
			if from == "" {
				from = "-"
			}
		}
		row := []any{q.Name, q.Kind, q.Depth, num(q.InFlight), num(q.Consumers), capacity, num(q.Delayed), oldest, dlq, to, from}
		if csv {
			limit, drops := "", ""
			if q.DeliveryLimit > 0 {
				limit = strconv.FormatInt(q.DeliveryLimit, 10)
			}
			if q.DropsAfter > 0 {
				drops = strconv.FormatInt(q.DropsAfter, 10)
			}
			row = append(row, q.Vhost, q.URL, q.Leader, strings.Join(q.Members, ";"), strings.Join(q.Online, ";"), limit, drops, q.Role, q.RoleSource)
		} else {
			members, notes := membership(q, short), queueNotes(q, short)
			if members == "" {
				members = "-"
			}
			row = append(row, members, notes)
		}
		t.Row(row...)
	}
	return t
}

// roleCell is the ROLE cell: the role, marked * when only the queue's
// name gives it.
func roleCell(q *broker.Queue) string {
	if q.RoleSource == broker.RoleFromName {
		return string(q.Role) + nameMark
	}
	return string(q.Role)
}

// nameMark marks a role inferred from the queue's name.
const nameMark = "*"

// nameMarkNote explains nameMark on stderr.
const nameMarkNote = "ROLE *: inferred from the queue's name alone (nothing dead-letters into it)"

// deadLetterTo names where a queue's dead letters go: its DLQs when known,
// else the dead-letter exchange (with routing key) or SQS target.
func deadLetterTo(q *broker.Queue) string {
	if len(q.DeadLetterQueues) > 0 {
		return strings.Join(q.DeadLetterQueues, ",")
	}
	if q.DeadLetterTarget == "" {
		return ""
	}
	s := q.DeadLetterTarget
	if q.DeadLetterRoutingKey != "" {
		s += " (" + q.DeadLetterRoutingKey + ")"
	}
	if strings.HasPrefix(s, "arn:") {
		if i := strings.LastIndexByte(s, ':'); i >= 0 {
			s = s[i+1:]
		}
	}
	return s
}

// membership is the MEMBERS cell of a replicated queue: members running
// of all, and its leader ("3/3 lead n1"), or "no leader" when the leader's
// node is not running; "" for a queue without members.
func membership(q *broker.Queue, short func(string) string) string {
	if len(q.Members) == 0 {
		return ""
	}
	s := fmt.Sprintf("%d/%d", len(q.Online), len(q.Members))
	if q.Leader != "" && slices.Contains(q.Online, q.Leader) {
		return s + " lead " + short(q.Leader)
	}
	return s + " no leader"
}

// queueNotes names what is wrong with a queue: members down, a lost
// quorum, messages dropped after the delivery limit.
func queueNotes(q *broker.Queue, short func(string) string) string {
	var notes []string
	if len(q.Members) > 0 {
		var down []string
		for _, m := range q.Members {
			if !slices.Contains(q.Online, m) {
				down = append(down, short(m))
			}
		}
		if len(down) > 0 {
			notes = append(notes, "down: "+strings.Join(down, ","))
		}
		if len(q.Online) <= len(q.Members)/2 && q.Kind == broker.KindQuorum {
			notes = append(notes, "no quorum: unavailable")
		}
	}
	if q.DropsAfter > 0 {
		why := "no dead-letter exchange"
		if q.DeliveryLimitDefault {
			why += ", 4.x default limit"
		}
		notes = append(notes, fmt.Sprintf("DROPS after %d deliveries (%s)", q.DropsAfter, why))
	}
	return strings.Join(notes, "; ")
}

// needsCare reports a queue the table marks: members down or messages
// dropped.
func needsCare(q *broker.Queue) bool {
	return q.DropsAfter > 0 || len(q.Online) < len(q.Members)
}

// dropWarning is the stderr line about quorum queues that drop a message
// once it passes their delivery limit; "" when none does.
func dropWarning(qs []broker.Queue) string {
	var names []string
	byDefault := 0
	for i := range qs {
		if qs[i].DropsAfter > 0 {
			names = append(names, "`"+qs[i].Name+"`")
			if qs[i].DeliveryLimitDefault {
				byDefault++
			}
		}
	}
	if len(names) == 0 {
		return ""
	}
	what := strings.Join(names, ", ")
	if len(names) > 3 {
		what = fmt.Sprintf("%s and %d more", strings.Join(names[:3], ", "), len(names)-3)
	}
	subject, verb, them := "quorum queues "+what+" have", "drop", "them"
	if len(names) == 1 {
		subject, verb, them = "quorum queue "+what+" has", "drops", "it"
	}
	limit := "its delivery limit"
	if byDefault == len(names) {
		limit = "RabbitMQ 4.x's default delivery limit of 20"
	}
	return fmt.Sprintf("warning: %s no dead-letter exchange and %s a message without a trace once it passes %s: give %s a dead-letter exchange (a policy with dead-letter-exchange), or, on 4.x, turn the limit off with delivery-limit -1",
		subject, verb, limit, them)
}

// renderQueues prints the table aligned, leaving out columns that no queue
// fills (CAPACITY on SQS, DELAYED on RabbitMQ). With colour, DLQs holding
// messages are red and the header is bold.
func renderQueues(w io.Writer, qs []broker.Queue, color, tty bool) error {
	t := queuesTable(qs, false)
	t.rows = t.visibleRows()
	keep := make([]bool, len(t.header))
	for c := range t.header {
		for _, r := range t.rows {
			if r[c] != "-" && r[c] != "" {
				keep[c] = true
				break
			}
		}
	}
	keep[0], keep[2] = true, true // NAME, DEPTH
	cols := []int{}
	for c, k := range keep {
		if k {
			cols = append(cols, c)
		}
	}
	width := make([]int, len(t.header))
	for _, c := range cols {
		width[c] = utf8.RuneCountInString(t.header[c])
		for _, r := range t.rows {
			width[c] = max(width[c], utf8.RuneCountInString(r[c]))
		}
	}
	numeric := map[int]bool{2: true, 3: true, 4: true, 5: true, 6: true}
	line := func(cells []string) string {
		var sb strings.Builder
		for i, c := range cols {
			cell := cells[c]
			pad := strings.Repeat(" ", width[c]-utf8.RuneCountInString(cell))
			if i == len(cols)-1 {
				if numeric[c] {
					sb.WriteString(pad + cell)
				} else {
					sb.WriteString(cell)
				}
				break
			}
			if numeric[c] {
				sb.WriteString(pad + cell)
			} else {
				sb.WriteString(cell + pad)
			}
			sb.WriteString("  ")
		}
		return strings.TrimRight(sb.String(), " ")
	}
	h := line(t.header)
	if color {
		h = "\x1b[1m" + h + "\x1b[0m"
	}
	if _, err := fmt.Fprintln(w, h); err != nil {
		return err
	}
	for i, r := range t.rows {
		l := line(r)
		switch {
		case color && needsAttention(&qs[i]):
			l = "\x1b[31m" + l + "\x1b[0m"
		case color && needsCare(&qs[i]):
			l = "\x1b[33m" + l + "\x1b[0m"
		}
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}
