package redrive

import (
	"context"
	"errors"
	"fmt"

	"github.com/dlq-tools/dlq/broker"
)

// Discard removes the selected messages of queue (opts.Filter, IDs, Limit,
// age). With an archive, each window is written to it unchanged and made
// durable (the archive publisher fsyncs before it confirms) before any
// message of the window is acknowledged; archiveDest names the file. With a
// nil archive the messages are only removed: callers must have the user's
// explicit consent (no archive asked for). Messages that are not selected are
// left as a redrive leaves them.
func Discard(ctx context.Context, src broker.Broker, queue string, archive broker.Publisher, archiveDest broker.Destination, opts Options) (Summary, error) {
	opts.Dest = archiveDest
	opts.KeepDeathHeaders = true
	opts.KeepFailureHeaders = true
	opts.NoRedriveHeader = true
	opts.Transform = nil
	opts.SetHeaders = nil
	var dst broker.Broker
	if archive != nil {
		dst = publisherBroker{archive, src}
		if opts.Dest.Kind == "" {
			opts.Dest = broker.Destination{Kind: broker.ToFile}
		}
	}
	e, err := newEngine(src, queue, dst, opts, modeDiscard)
	if err != nil {
		return newSummary(queue, archiveDest.String(), opts.DryRun), err
	}
	if opts.DryRun {
		return e.dryRun(ctx)
	}
	return e.run(ctx)
}

// publisherBroker lets a bare Publisher stand as a destination broker.
type publisherBroker struct {
	broker.Publisher
	of broker.Broker
}

// System is the publisher's own, when it names one; "" (no broker's)
// for a bare file writer.
func (p publisherBroker) System() broker.System {
	if b, ok := p.Publisher.(interface{ System() broker.System }); ok {
		return b.System()
	}
	return ""
}
func (p publisherBroker) String() string {
	if b, ok := p.Publisher.(broker.Broker); ok {
		return b.String()
	}
	return "archive"
}
func (p publisherBroker) Close() error { return nil }

// Traits are the publisher's, when it declares any.
func (p publisherBroker) Traits(q broker.Queue) broker.Traits { return broker.TraitsOf(p.Publisher, q) }

// Purge removes every message of queue. With an archive it is a Discard of
// everything (archive first, then acknowledge, window by window: a
// broker-side purge could remove messages that arrived after the archive
// was written). Without one it uses the broker's own purge when there is
// one, else takes and acknowledges every message.
func Purge(ctx context.Context, src broker.Broker, queue string, archive broker.Publisher, archiveDest broker.Destination, opts Options) (Summary, error) {
	opts.Filter, opts.IDs, opts.OlderThan, opts.NewerThan, opts.Limit = nil, nil, 0, 0, 0
	if archive != nil || opts.DryRun {
		return Discard(ctx, src, queue, archive, archiveDest, opts)
	}
	p, ok := src.(broker.Purger)
	if !ok {
		return Discard(ctx, src, queue, nil, broker.Destination{}, opts)
	}
	s := newSummary(queue, "purge", false)
	n, err := p.Purge(ctx, queue)
	if err != nil {
		return s, fmt.Errorf("purge `%s`: %w", queue, err)
	}
	s.Moved = n
	s.Examined = n
	s.Destinations["purge"] = n
	return s, nil
}

// Edit publishes edited in place of the message with the fingerprint
// edited.ID in queue, then removes that original: one redrive of one
// message, with every guarantee of Run (the original is acknowledged only
// after the destination confirmed the edited copy). edited is published as
// given, after the usual header handling (death headers stripped unless
// opts.KeepDeathHeaders, the x-dlq-redrive record added). The Summary's
// Moved is 1 on success; an original no longer in the queue is ErrNotFound.
func Edit(ctx context.Context, src broker.Broker, queue string, dst broker.Broker, edited *broker.Message, opts Options) (Summary, error) {
	if edited == nil || edited.ID == "" {
		return newSummary(queue, opts.Dest.String(), opts.DryRun), errors.New("edit: the edited message must carry the original's ID")
	}
	id := edited.ID
	opts.IDs = []string{id}
	opts.Limit = 1
	opts.Filter = nil
	opts.Transform = func(ctx context.Context, m *broker.Message) (*broker.Message, error) {
		nm := edited.Clone()
		nm.ID = m.ID
		return nm, nil
	}
	s, err := Run(ctx, src, queue, dst, opts)
	if err == nil && s.Moved == 0 && !opts.DryRun && s.TotalFailed() == 0 {
		err = broker.Errorf(broker.ErrNotFound, "edit", "message %s is no longer in `%s`", id, queue)
	}
	if err == nil && s.TotalFailed() > 0 {
		err = fmt.Errorf("edit: message %s was not moved: %v", id, s.Errors)
	}
	return s, err
}
