// Package tui is dlq's terminal user interface: browse queues, read dead
// letters under the peek-safety rules, understand why they died, fix them and
// send them home — without a way to lose one.
//
// The package never speaks to a broker SDK. Everything it does to the world
// goes through a Backend, a set of small functions that the cmd layer fills
// with the inspect and redrive libraries (and that tests fill with fakes).
// Every call runs inside a tea.Cmd and comes back as a typed message; Update
// and View never block.
package tui

import (
	"context"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// Backend is what the TUI can do. A nil function is a capability the TUI
// does not have: its keys are absent from the keymaps and from the help. In
// read-only mode the cmd layer leaves every mutating function nil.
type Backend struct {
	// Name describes the broker, credentials redacted ("amqp://dlq@host/").
	Name string
	// ReadOnly is shown in the header; the mutating functions are nil.
	ReadOnly bool

	// Queues lists every queue with a health snapshot.
	Queues func(ctx context.Context) ([]broker.Queue, error)
	// Peek reads the messages of a queue without removing them, following the
	// peek-safety rules; visit is called once per message in queue order and
	// may keep the message.
	Peek func(ctx context.Context, queue string, visit func(*broker.Message) error) (broker.PeekReport, error)
	// Compile compiles a jq filter over the message document
	// {id, headers, properties, attributes, death, body}.
	Compile func(expr string) (Matcher, error)
	// Reason extracts the failure reason of a message.
	Reason func(m *broker.Message) string
	// Decode returns the body decoded for reading (gzip undone) and what it
	// is: "json", "text" or "binary".
	Decode func(m *broker.Message) (body []byte, kind string)
	// Attributes reports whether a message keeps its metadata as message
	// attributes rather than headers (broker.Traits.Attributes of its
	// queue), so that the editor offers the one it keeps; nil: headers.
	Attributes func(m *broker.Message) bool
	// Shape returns the shape of a failure reason (variable parts masked),
	// shown in the REASON column; nil shows reasons as they are.
	Shape func(reason string) string
	// Group counts msgs by a stats grouping spec (reason, reason-text,
	// redrives, source, exchange, routing-key, header:NAME, attr:NAME,
	// body:.path, age, day, hour), as `dlq stats` does; nil leaves the TUI
	// without its statistics screen.
	Group func(ctx context.Context, spec string, msgs []*broker.Message) (Grouping, error)
	// Triage plans msgs as `dlq triage` does: per failure group, the
	// suggested action, its rule and evidence; nil leaves the TUI without
	// its triage screen.
	Triage func(ctx context.Context, msgs []*broker.Message) (Triage, error)

	// Redrive moves messages from a queue to a destination (origin by
	// default); every record of it goes to the audit log.
	Redrive func(ctx context.Context, req ActionRequest, progress func(Progress)) (Result, error)
	// Discard removes messages after archiving them to req.Archive.
	Discard func(ctx context.Context, req ActionRequest, progress func(Progress)) (Result, error)
	// Export copies messages into an archive file without removing them. It
	// changes nothing on the broker and stays available in read-only mode.
	Export func(ctx context.Context, req ActionRequest, progress func(Progress)) (Result, error)
	// Replace publishes edited to dest with confirms, then removes original
	// from queue: one redrive of one message with a transform, audited.
	Replace func(ctx context.Context, req ReplaceRequest) (Result, error)
}

// Grouping is messages counted by one grouping, largest group first.
type Grouping struct {
	Groups []GroupRow
	Total  int
	// TrendStep is the span of time of one bucket of each group's Trend.
	TrendStep time.Duration
	// Of returns the index in Groups of m's group, -1 when m is in none.
	Of func(m *broker.Message) int
}

// GroupRow is one group of a Grouping.
type GroupRow struct {
	// Key is the group's value (a reason template, a source, …).
	Key string
	// ID is the failure group ID of a reason template ("" otherwise).
	ID             string
	Count          int
	Bytes          int64
	Oldest, Newest time.Time
	LastHour       int64
	// Trend is a sparkline of the group's deaths over the time the queue
	// spans, one character a TrendStep.
	Trend string
	// Hot lists the most frequent values of the template's placeholders.
	Hot string
}

// Matcher reports whether a message matches a compiled filter.
type Matcher func(m *broker.Message) (bool, error)

// ActionRequest names the messages an action works on: the ones with the
// given fingerprints, or (IDs empty) every message matching Filter, or (both
// empty) the whole queue.
type ActionRequest struct {
	Queue   string
	IDs     []string
	Filter  string
	Dest    broker.Destination // Redrive
	Archive string             // Discard (archive-first) and Export: file path
	// Expected is how many messages the user confirmed; the library may find
	// fewer (already gone) or more (arrived since) when IDs is empty.
	Expected int64
	// Messages are the messages as read, for Export: it writes exactly what
	// the user saw, without reading the queue again.
	Messages []*broker.Message
	// Groups are the failure group IDs the messages were chosen by, for the
	// audit record.
	Groups []string
	// Canary redrives in growing steps and stops when moved messages come
	// back (`dlq redrive --canary`); offered for a group redrive.
	Canary bool
	// Words words the settings that per-message errors name, as the TUI
	// does: keys where it has one (nil: broker.PlainSetting).
	Words broker.Renderer
}

// ReplaceRequest is one edited message to publish in place of its original.
type ReplaceRequest struct {
	Queue    string
	Original *broker.Message
	Edited   *broker.Message
	Dest     broker.Destination
}

// Progress is reported by long actions while they run.
type Progress struct {
	// Done is how much of Total is behind: messages finished (moved,
	// discarded, exported), or, where Note says so, messages examined of a
	// queue's depth.
	Done   int64
	Failed int64
	Total  int64 // 0 when unknown
	// Note, when set, words the count in place of Done/Total ("moved
	// 24/60", "moved 24, examined 84 of ~200 in the queue").
	Note string
	// Step is shown beside the job's title (a canary's step and wait).
	Step string
}

// Result is what an action did.
type Result struct {
	Done    int64
	Skipped int64
	Failed  int64
	// Summary is one line for the notice ("moved 12 messages to origin").
	Summary string
}

// Options shape a TUI session.
type Options struct {
	// Queue, when set, opens this queue's messages at start.
	Queue string
	// Limit bounds how many messages of a queue are read (0: 100,000).
	Limit int
	// Refresh is how often queue depths are refreshed (0: 2s; negative: never).
	Refresh time.Duration
	// Color enables colours (false under NO_COLOR or --no-color).
	Color bool
	// Editor is the external editor command ($VISUAL, $EDITOR, or vi).
	Editor string
	// TempDir holds the file handed to the external editor (default os.TempDir()).
	TempDir string
	// Now is the clock (tests fix it).
	Now func() time.Time
	// ArchiveDir is where discard and export archives are proposed.
	ArchiveDir string
}
