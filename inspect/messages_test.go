package inspect

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/broker"
)

func lettersN(n int) Messages {
	ms := make(Messages, n)
	for i := range ms {
		ms[i] = &broker.Message{ID: fmt.Sprintf("m%d", i), Body: []byte("x")}
	}
	return ms
}

func publishedIDs(got []broker.Outgoing) string {
	ids := make([]string, len(got))
	for i, o := range got {
		ids[i] = o.Message.ID
	}
	return strings.Join(ids, " ")
}

func TestMessagesPeek(t *testing.T) {
	ms := lettersN(5)
	var seen []string
	rep, err := ms.Peek(context.Background(), "ignored", broker.PeekOptions{Limit: 3}, func(m *broker.Message) error {
		seen = append(seen, m.ID)
		return nil
	})
	if got := strings.Join(seen, " "); err != nil || got != "m0 m1 m2" || rep != (broker.PeekReport{Read: 3}) {
		t.Errorf("peek with limit 3: visited %q, report %+v, err %v; want m0 m1 m2, read 3, nothing changed", got, rep, err)
	}
	stop := errors.New("stop")
	rep, err = ms.Peek(context.Background(), "", broker.PeekOptions{}, func(m *broker.Message) error { return stop })
	if !errors.Is(err, stop) || rep.Read != 1 {
		t.Errorf("visit error: read %d, err %v; want 1 and the error", rep.Read, err)
	}
}

// Export over messages already read writes exactly them, in batches, and
// counts each batch after the publisher confirmed it.
func TestExportMessages(t *testing.T) {
	ms := lettersN(5)
	pub := &fakePublisher{}
	var progress []string
	res, err := Export(context.Background(), ms, "q", pub, broker.Destination{Kind: broker.ToFile, Path: "/x"},
		ExportOptions{Batch: 2, Progress: func(n int64) { progress = append(progress, fmt.Sprint(n)) }})
	if err != nil || res.Exported != 5 || res.Peek.Read != 5 || pub.batches != 3 {
		t.Fatalf("export: %+v, %d batches, err %v; want 5 exported and read in 3 batches", res, pub.batches, err)
	}
	if got := publishedIDs(pub.got); got != "m0 m1 m2 m3 m4" {
		t.Errorf("published %q, want m0 m1 m2 m3 m4", got)
	}
	if got := strings.Join(progress, " "); got != "2 4 5" {
		t.Errorf("progress %q, want 2 4 5", got)
	}
}

// A cancelled export still writes what it read, and the count it returns
// is what the destination holds.
func TestExportMessagesCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ms := lettersN(7)
	pub := &fakePublisher{}
	res, err := Export(ctx, ms, "q", pub, broker.Destination{Kind: broker.ToFile, Path: "/x"},
		ExportOptions{Batch: 3, Progress: func(n int64) {
			if n == 3 {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if res.Exported != int64(len(pub.got)) || res.Exported < 3 || res.Exported == 7 {
		t.Errorf("exported %d, publisher holds %d (%s): want the same count, at least the first batch and not all", res.Exported, len(pub.got), publishedIDs(pub.got))
	}
}

// failingPublisher confirms every message but the one named fail.
type failingPublisher struct {
	fakePublisher
	fail string
}

func (f *failingPublisher) Publish(ctx context.Context, msgs []broker.Outgoing) ([]error, error) {
	errs, err := f.fakePublisher.Publish(ctx, msgs)
	for i, o := range msgs {
		if o.Message.ID == f.fail {
			errs[i] = broker.ErrUnroutable
		}
	}
	return errs, err
}

func TestExportMessagesPublishFails(t *testing.T) {
	pub := &failingPublisher{fail: "m3"}
	res, err := Export(context.Background(), lettersN(6), "q", pub, broker.Destination{Kind: broker.ToFile, Path: "/x"}, ExportOptions{Batch: 2})
	if !errors.Is(err, broker.ErrUnroutable) || !strings.Contains(err.Error(), "m3") {
		t.Fatalf("err %v, want ErrUnroutable naming m3", err)
	}
	if res.Exported != 2 {
		t.Errorf("exported %d, want 2: only the batch before the failed one was confirmed", res.Exported)
	}
}
