// Package redrive moves dead letters from a queue to where they belong (their
// origin, another queue or exchange, another broker, an archive file), and
// removes them (discard, purge), without ever losing one.
//
// The engine consumes the source in bounded windows, selects and transforms
// each message, publishes the window to the destination with confirmation,
// and acknowledges exactly the messages the destination confirmed. Anything
// else stays in the source. A crash at any instant may duplicate a message
// (at most the messages in flight), never lose one; a journal lets an
// interrupted run be finished and tells what was in flight.
//
// The package speaks only the broker interfaces; it never imports an SDK.
package redrive

import (
	"context"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// Filter decides whether a message is selected. inspect's compiled queries
// satisfy it.
type Filter interface {
	Match(ctx context.Context, m *broker.Message) (bool, error)
}

// FilterFunc adapts a function to Filter.
type FilterFunc func(ctx context.Context, m *broker.Message) (bool, error)

// Match calls f.
func (f FilterFunc) Match(ctx context.Context, m *broker.Message) (bool, error) { return f(ctx, m) }

// Transform returns the message to publish in place of m. It must not modify
// m; returning an error refuses this one message (counted under
// "invalid-transform"), which then stays in the source.
type Transform func(ctx context.Context, m *broker.Message) (*broker.Message, error)

// Options shape a redrive, discard or purge. The zero value moves every
// message to its origin with the defaults below.
type Options struct {
	// Dest is where messages go; the zero value means ToOrigin.
	Dest broker.Destination

	// Selection: a message is moved only when it passes all of these.
	Filter Filter
	IDs    []string // stable fingerprints (broker.Fingerprint)
	// ExcludeIDs are left in the source whatever else selects them.
	ExcludeIDs []string
	// DedupeBy keys each selected message; of the messages with one key
	// only the first is moved, the others stay (ReasonDuplicate).
	DedupeBy func(ctx context.Context, m *broker.Message) (string, error)
	Limit    int64 // most messages to move; 0 = no limit
	// AllowDrop moves into a destination queue that drops its oldest
	// messages past a length limit (RabbitMQ overflow drop-head), which
	// is otherwise refused before anything is taken.
	AllowDrop bool
	// MaxRedrives leaves in the source the messages that dlq has already
	// redriven this many times, by the count of their RedriveHeader
	// record (ReasonRedriveLimit); 0 = no limit.
	MaxRedrives int64
	OlderThan   time.Duration // only messages older than this (Message.Age)
	NewerThan   time.Duration // only messages newer than this

	// Transform rewrites each selected message; see JQTransform.
	Transform Transform
	// SetHeaders adds or replaces application headers (SQS: String
	// message attributes).
	SetHeaders map[string]string
	// KeepDeathHeaders keeps x-death, x-first-death-*, x-last-death-* and
	// x-delivery-count on the moved message; by default they are stripped.
	KeepDeathHeaders bool
	// KeepFailureHeaders keeps the failure headers of client frameworks
	// and the origin recorded with them (broker.IsFailureHeader:
	// x-exception-*, x-original-*, MT-Fault-*, MT-Reason,
	// NServiceBus.ExceptionInfo.*, NServiceBus.FailedQ,
	// NServiceBus.TimeOfFailure; SQS: attributes so named); by default they
	// are stripped, as they describe the failure being redriven.
	KeepFailureHeaders bool
	// ResetRetries sets the retry counters that frameworks read
	// (broker.IsRetryCounter: Spring's retry-count, MassTransit's
	// MT-Fault-RetryCount and MT-Fault-RedeliveryCount, NServiceBus.Retries)
	// to 0 where a moved message still carries them, so that it gets its
	// full retries; ResetHeaders does so for the headers (SQS: attributes)
	// named.
	ResetRetries bool
	ResetHeaders []string
	// Unwrap sends, of a Lambda on-failure record, its requestPayload (the
	// event the function was invoked with), and of an SNS notification its
	// Message, instead of the envelope (inspect.Unwrap); other messages
	// move as they are. By default every message moves exactly as it came.
	Unwrap bool
	// NoRedriveHeader leaves out the x-dlq-redrive header/attribute.
	NoRedriveHeader bool

	// DryRun changes nothing: messages are read with the source's Peeker
	// and the plan is reported in the Summary.
	DryRun bool
	// DiffLimit is how many before/after diffs a dry run keeps (default 3).
	DiffLimit int
	// Read, when set, is what a dry run (and Preview) reads in place of the
	// source: a read of it already made (a front end read the queue to
	// resolve its selection), so that the queue is read once. Its report's
	// Changed is what that read changed.
	Read broker.Peeker

	// Rate caps messages per second (0 = unlimited). Ramp raises the rate
	// linearly from a tenth of Rate to Rate over this long.
	Rate float64
	Ramp time.Duration
	// Concurrency is the number of windows published at once (default 4;
	// forced to 1 for SQS FIFO sources to keep group order).
	Concurrency int
	// Window is the number of messages published and confirmed together
	// (default 250; SQS sources use multiples of 10).
	Window int
	// Visibility is how long an SQS source keeps taken messages hidden
	// between extensions (default 2m).
	Visibility time.Duration
	// Idle is how long to wait for another message before the source
	// counts as drained (0: the adapter's default).
	Idle time.Duration

	// Journal records each message's progress so that an interrupted run
	// can be finished (nil: no journal).
	Journal *Journal
	// Resume carries what interrupted runs recorded: messages confirmed at
	// the destination but never acknowledged are acknowledged on sight
	// instead of published again.
	Resume *ResumeState

	// Progress is called now and then (at most every 100ms) and once at
	// the end, from the engine's goroutine: keep it quick.
	Progress func(Progress)
	// Notice receives one-line notices for stderr (flow control, resume).
	Notice func(string)
	// Words words the settings that the examples in Summary.Errors name
	// (nil: broker.PlainSetting).
	Words broker.Renderer
	// SourceName is recorded as the source in the x-dlq-redrive header
	// (default: the queue name).
	SourceName string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Selected is how many messages the selection is known to hold (a
	// preview counted them), which progress reports measure moves
	// against; 0 when unknown.
	Selected int64
	// MaxIDs bounds Summary.IDs (default 10000).
	MaxIDs int
	// Moved receives the fingerprints of the messages moved, every one,
	// as they are acknowledged (one call at a time).
	Moved func(ids []string)
	// Chosen is given each message the run chose to move (selected,
	// transformed and addressed), before it is published; a canary learns
	// the failure groups of what it moved from it. Keep it quick.
	Chosen func(m *broker.Message)

	// SkipRuns leaves in the source every message whose x-dlq-redrive
	// record was written by one of these runs, or by this run when
	// SkipRuns is not nil (ReasonReturned): a canary's steps do not move
	// again what it moved and the route dead-lettered back. It does not
	// make a run selective (Selective): the messages it leaves are parked
	// as failures are.
	SkipRuns []string
	// WholeGroups makes Limit end at a message group's end on a source
	// with ordered message groups (SQS FIFO): once Limit messages are
	// chosen, messages of the groups already chosen still move and every
	// other group stays whole in the source (ReasonLaterStep).
	WholeGroups bool
}

// Skip and failure reasons counted in a Summary.
const (
	ReasonFiltered    = "filtered"
	ReasonNotSelected = "not-selected" // --id given, this one not listed
	ReasonExcluded    = "excluded"     // --exclude-id lists it
	ReasonDuplicate   = "duplicate"    // --dedupe-by: its key was moved already
	// ReasonRedriveLimit: dlq has redriven the message MaxRedrives times
	// already (its x-dlq-redrive count), so it stays.
	ReasonRedriveLimit     = "redrive-limit"
	ReasonTooNew           = "too-new"
	ReasonTooOld           = "too-old"
	ReasonAmbiguousOrigin  = "ambiguous-origin"
	ReasonNoOrigin         = "no-origin"
	ReasonUnroutable       = "unroutable"
	ReasonInvalidTransform = "invalid-transform"
	ReasonFilterError      = "filter-error"
	ReasonRejected         = "rejected" // the destination refused the message
	ReasonPublishError     = "publish-error"
	ReasonNotSettled       = "not-settled" // published, but the source refused the ack
	ReasonAlreadyMoved     = "already-moved"
	// ReasonGroupHeld: an earlier message of the same SQS FIFO group stays
	// in the source, so this one stays too (group order is kept).
	ReasonGroupHeld = "group-held"
	// ReasonAttributeLimit: the SQS message would need more than the 10
	// message attributes SQS allows (its own, --set-header, the transform's
	// and x-dlq-redrive).
	ReasonAttributeLimit = "attribute-limit"
	// ReasonReturned: this canary moved the message in an earlier step and
	// its route dead-lettered it back (Options.SkipRuns).
	ReasonReturned = "returned"
	// ReasonLaterStep: a canary step took whole message groups up to its
	// size, and this message's group is left for a later step.
	ReasonLaterStep = "later-step"
)

// Summary is what a run did. Counts are messages, not publishes.
type Summary struct {
	// RunID names the run in the x-dlq-redrive record of every message it
	// moved ("" for a dry run that moved nothing).
	RunID       string `json:"run_id,omitempty"`
	Source      string `json:"source"`
	Destination string `json:"destination"`
	DryRun      bool   `json:"dry_run,omitempty"`
	// Examined is how many messages were looked at.
	Examined int64 `json:"examined"`
	// OutOfReach (a dry run) counts messages the source held that its read
	// could not see (broker.PeekReport.OutOfReach: an SQS FIFO queue shows
	// only the head of each message group). They are not in Examined nor in
	// any count; the real run takes them as their groups move on.
	OutOfReach int64 `json:"out_of_reach,omitempty"`
	// Moved is how many were confirmed at the destination and removed from
	// the source (for a discard or purge: removed).
	Moved int64 `json:"moved"`
	// Skipped were left in the source on purpose, by reason.
	Skipped map[string]int64 `json:"skipped,omitempty"`
	// Failed were meant to move but stayed in the source, by reason.
	Failed map[string]int64 `json:"failed,omitempty"`
	// Destinations counts moved (or, in a dry run, planned) messages per
	// destination.
	Destinations map[string]int64 `json:"destinations,omitempty"`
	// OriginRules says, for each destination a redrive to origin chose,
	// which record chose it (x-death, x-original-exchange,
	// MT-Fault-InputAddress, NServiceBus.FailedQ,
	// DeadLetterQueueSourceArn, the DLQ's only source queue); several are
	// joined with ", ".
	OriginRules map[string]string `json:"origin_rules,omitempty"`
	// Archived counts messages written to the archive (discard, purge).
	Archived int64 `json:"archived,omitempty"`
	// IDs are the fingerprints of the moved messages (a dry run: of the
	// messages it would move), at most MaxIDs.
	IDs          []string `json:"ids,omitempty"`
	IDsTruncated bool     `json:"ids_truncated,omitempty"`
	// Errors are examples of per-message failures (at most a few per
	// reason), "fingerprint: reason".
	Errors []string `json:"errors,omitempty"`
	// Diffs are before/after views of the first transformed messages (dry
	// run), at most DiffLimit; a message the transform failed on has its
	// Error instead. DiffsMore counts the transformed messages after them.
	Diffs     []Diff `json:"diffs,omitempty"`
	DiffsMore int64  `json:"diffs_more,omitempty"`
	// Rotated counts messages left in the source by republishing them to
	// its back (RabbitMQ), so they are not delivered again in this run.
	Rotated int64 `json:"rotated,omitempty"`
	// Returned counts messages handed back to the source unchanged.
	Returned int64 `json:"returned,omitempty"`
	// NotReturned counts messages the run tried to hand back to the source
	// and could not (the broker refused or was unreachable). They are not
	// lost: the source gets them back on its own once the run's hold ends
	// (an SQS visibility timeout, a closed RabbitMQ channel).
	NotReturned int64 `json:"not_returned,omitempty"`
	// Resumed says what interrupted runs had left behind.
	Resumed *ResumeReport `json:"resumed,omitempty"`
	// Resent counts moved messages the destination confirmed only after a
	// send whose answer was lost (a cut connection, a restart) was sent
	// again: each may be there twice. ResentIDs names them (at most
	// MaxIDs).
	Resent    int64    `json:"resent,omitempty"`
	ResentIDs []string `json:"resent_ids,omitempty"`
	// DeliveredAgain counts messages the source delivered again after this
	// run had moved and deleted them (broker.Traits.StableIDs): they were
	// deleted again, not sent twice, and are not counted in Moved.
	DeliveredAgain int64 `json:"delivered_again,omitempty"`
	// Hidden counts messages still hidden in an SQS source when the run
	// ended: taken by a receive whose answer never arrived (a restart, a cut
	// connection) or held by another consumer. They are not lost; a run
	// with --resume moves them once they are visible again.
	Hidden int64 `json:"hidden,omitempty"`
	// Cancelled is true when the context ended the run early.
	Cancelled bool `json:"cancelled,omitempty"`
	// ReadChanged is what a dry run's read changed in the source (the
	// Peeker's PeekReport.Changed: a rotation, redelivered flags,
	// receive counts), "" when it changed nothing.
	ReadChanged string        `json:"read_changed,omitempty"`
	Elapsed     time.Duration `json:"elapsed_ns"`
	Notices     []string      `json:"notices,omitempty"`
}

// Diff is a transformed message before and after, as indented JSON
// documents, with a line diff between them, or the error the transform
// gave for it.
type Diff struct {
	ID     string `json:"id"`
	Before string `json:"before"`
	After  string `json:"after,omitempty"`
	Lines  string `json:"diff,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Progress is a snapshot for a progress bar.
type Progress struct {
	Examined int64
	Moved    int64
	Skipped  int64
	Failed   int64
	// Total is what the run measures against: with Selected, the
	// messages selected (Options.Selected, the IDs listed, or the limit
	// of a run that selects every message), which Moved and Failed count
	// down;
	// otherwise the source's depth at the start, which Examined counts
	// down. 0 when unknown.
	Total    int64
	Selected bool
	Elapsed  time.Duration
	// Rate is messages moved per second, smoothed.
	Rate    float64
	Blocked bool
	Done    bool
}

// Behind is how much of Total is behind: messages moved or failed against a
// selection, messages examined against a depth.
func (p Progress) Behind() int64 {
	if p.Selected {
		return p.Moved + p.Failed
	}
	return p.Examined
}

// ETA estimates the time left, or 0 when it cannot tell.
func (p Progress) ETA() time.Duration {
	left := p.Total - p.Behind()
	if p.Total <= 0 || left <= 0 || p.Rate <= 0 {
		return 0
	}
	return time.Duration(float64(left) / p.Rate * float64(time.Second))
}

func (s *Summary) skip(reason string)          { s.Skipped[reason]++ }
func (s *Summary) fail(reason string, n int64) { s.Failed[reason] += n }
func (s *Summary) dest(d string, n int64)      { s.Destinations[d] += n }

// rule records that via chose destination d.
func (s *Summary) rule(d, via string) {
	if via == "" {
		return
	}
	if s.OriginRules == nil {
		s.OriginRules = map[string]string{}
	}
	have := s.OriginRules[d]
	for _, r := range strings.Split(have, ", ") {
		if r == via {
			return
		}
	}
	if have != "" {
		have += ", "
	}
	s.OriginRules[d] = have + via
}
func newSummary(src, dst string, dry bool) Summary {
	return Summary{Source: src, Destination: dst, DryRun: dry,
		Skipped: map[string]int64{}, Failed: map[string]int64{}, Destinations: map[string]int64{}}
}

// TotalSkipped is the sum of Skipped.
func (s Summary) TotalSkipped() int64 { return sum(s.Skipped) }

// TotalFailed is the sum of Failed.
func (s Summary) TotalFailed() int64 { return sum(s.Failed) }

// Counts flattens the summary's counts into one map, as the audit log
// records them: examined and moved always, skipped:REASON and
// failed:REASON per reason, archived and resent when there were any.
func (s Summary) Counts() map[string]int64 {
	c := map[string]int64{"examined": s.Examined, "moved": s.Moved}
	for k, v := range s.Skipped {
		c["skipped:"+k] = v
	}
	for k, v := range s.Failed {
		c["failed:"+k] = v
	}
	if s.Archived > 0 {
		c["archived"] = s.Archived
	}
	if s.Resent > 0 {
		c["resent"] = s.Resent
	}
	return c
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}
