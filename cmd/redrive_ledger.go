package cmd

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/archive"
	"github.com/dlq-tools/dlq/redrive"
)

// archiveLedger records what a redrive from an archive moved: an archive is
// never changed by a redrive, so the ledger is what tells a second run of
// the same redrive that its messages went already.
type archiveLedger struct {
	dir, key string
	entry    redrive.LedgerEntry
	mu       sync.Mutex
}

// openArchiveLedger returns nil when src is not an archive file. Unless
// again, it refuses a redrive whose selection holds messages already
// redriven from this archive to the same destination (a dry run of the
// selection names them), before anything is sent.
func openArchiveLedger(ctx context.Context, o *redriveOptions, src broker.Broker, queue string, dst broker.Broker, ro redrive.Options) (*archiveLedger, error) {
	a, ok := src.(*archive.Broker)
	if !ok || a.Path() == "" {
		return nil, nil
	}
	key, err := redrive.ArchiveKey(a.Path(), queue)
	if err != nil {
		return nil, err
	}
	l := &archiveLedger{dir: redrive.LedgerDir(), key: key, entry: redrive.LedgerEntry{
		Archive: a.Path(), Queue: queue, Destination: broker.Redact(dst.String()) + "#" + ro.Dest.String()}}
	if o.Again || o.Resume {
		// A resumed run's journal knows what its interrupted run sent.
		return l, nil
	}
	pre := ro
	pre.DryRun, pre.MaxIDs, pre.DiffLimit = true, math.MaxInt, 0
	pre.Progress, pre.Notice, pre.Journal, pre.Resume, pre.Moved = nil, nil, nil, nil, nil
	sum, err := redrive.Run(ctx, src, queue, dst, pre)
	if err != nil {
		return nil, err
	}
	n, last, err := redrive.Redriven(l.dir, key, l.entry.Destination, sum.IDs)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		return nil, fmt.Errorf("%d of these messages were already redriven to %s on %s (`dlq redrive %s` from %s): pass `--again` to send them anyway",
			n, ro.Dest.String(), last.Time.UTC().Format("2006-01-02 15:04 MST"), queue, last.Archive)
	}
	return l, nil
}

// moved is the redrive's Options.Moved.
func (l *archiveLedger) moved(ids []string) {
	l.mu.Lock()
	l.entry.IDs = append(l.entry.IDs, ids...)
	l.mu.Unlock()
}

// record writes what the run moved, whatever its outcome.
func (l *archiveLedger) record(now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entry.Time = now.UTC()
	return redrive.RecordRedriven(l.dir, l.key, l.entry)
}
