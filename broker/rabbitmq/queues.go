package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/rabbitrules"
)

var (
	_ broker.QueueLister    = (*Broker)(nil)
	_ broker.QueueInspector = (*Broker)(nil)
)

// mgmtQueue is one queue as the management API describes it. Statistics are
// pointers: a queue that has not yet been through a statistics interval has
// none, and dlq reports them as unknown rather than zero.
type mgmtQueue struct {
	Name                      string         `json:"name"`
	Vhost                     string         `json:"vhost"`
	Type                      string         `json:"type"`
	Durable                   bool           `json:"durable"`
	Arguments                 map[string]any `json:"arguments"`
	Policy                    any            `json:"policy"`
	OperatorPolicy            any            `json:"operator_policy"`
	EffectivePolicyDefinition map[string]any `json:"effective_policy_definition"`
	Messages                  *int64         `json:"messages"`
	MessagesReady             *int64         `json:"messages_ready"`
	MessagesUnacknowledged    *int64         `json:"messages_unacknowledged"`
	Consumers                 *int64         `json:"consumers"`
	ConsumerCapacity          *float64       `json:"consumer_capacity"`
	ConsumerUtilisation       *float64       `json:"consumer_utilisation"`
	MessageBytesReady         *int64         `json:"message_bytes_ready"`
	// Replicated queues (quorum, stream): node names.
	Leader  any      `json:"leader"`
	Members []string `json:"members"`
	Online  []string `json:"online"`
}

const (
	queueStatColumns = "name,vhost,type,durable,arguments,policy,operator_policy,effective_policy_definition," +
		"messages,messages_ready,messages_unacknowledged,consumers,consumer_capacity,consumer_utilisation,message_bytes_ready," +
		"leader,members,online"
	queueTopologyColumns = "name,type,arguments,effective_policy_definition"
)

func (b *Broker) vhostPath() string { return url.PathEscape(b.vhost) }

// Queues lists every queue of the vhost with its health snapshot and the
// dead-letter relations between queues (see resolveDeadLetters).
func (b *Broker) Queues(ctx context.Context) ([]broker.Queue, error) {
	var (
		mqs       []mgmtQueue
		bindings  []mgmtBinding
		exchanges []mgmtExchange
	)
	err := parallel(
		func() error {
			return b.mgmtDo(ctx, "GET", "/queues/"+b.vhostPath()+"?columns="+queueStatColumns, nil, &mqs)
		},
		func() error { return b.mgmtDo(ctx, "GET", "/bindings/"+b.vhostPath(), nil, &bindings) },
		func() error {
			return b.mgmtDo(ctx, "GET", "/exchanges/"+b.vhostPath()+"?columns=name,type", nil, &exchanges)
		},
	)
	if err != nil {
		return nil, b.listErr(err)
	}
	major := b.serverMajor(ctx)
	qs := make([]broker.Queue, len(mqs))
	dls := make([]deadLetter, len(mqs))
	for i := range mqs {
		qs[i], dls[i] = b.toQueue(&mqs[i], major)
	}
	b.exactDepths(ctx, qs)
	resolveDeadLetters(qs, dls, bindings, exchanges)
	sort.Slice(qs, func(i, j int) bool { return qs[i].Name < qs[j].Name })
	return qs, nil
}

// declarePassive is a passive declare that ctx interrupts (closing ch).
func declarePassive(ctx context.Context, ch *amqp.Channel, name string) (amqp.Queue, error) {
	stop := context.AfterFunc(ctx, func() { _ = ch.Close() })
	defer stop()
	return ch.QueueDeclarePassive(name, false, false, false, false, nil)
}

// Bounds of exactDepths: channels asking at once, and the time it may take
// before the remaining queues keep their statistics.
const (
	depthWorkers  = 8
	depthDeadline = 3 * time.Second
)

// exactDepths replaces the management API's depth of each classic and
// quorum queue with the queue's own count (a passive declare). The
// statistics are samples, and those of a quorum queue trail its changes by
// several seconds: it can read 0 right after it filled, which in an
// incident reads as "empty". A queue that cannot be asked (deleted since the
// listing, exclusive to another connection) or not reached within
// depthDeadline keeps its statistic.
func (b *Broker) exactDepths(ctx context.Context, qs []broker.Queue) {
	ctx, cancel := context.WithTimeout(ctx, depthDeadline)
	defer cancel()
	next := make(chan int)
	go func() {
		defer close(next)
		for i := range qs {
			if qs[i].Kind == broker.KindStream {
				continue
			}
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for w := 0; w < depthWorkers && w < len(qs); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ch *amqp.Channel
			for i := range next {
				// A failed declare closes the channel: the next queue
				// opens another.
				if ch == nil || ch.IsClosed() {
					c, err := b.channel(ctx)
					if err != nil {
						return
					}
					ch = c
				}
				if q, err := declarePassive(ctx, ch, qs[i].Name); err == nil {
					qs[i].Depth = int64(q.Messages)
				}
			}
			if ch != nil {
				_ = ch.Close()
			}
		}()
	}
	wg.Wait()
}

func (b *Broker) listErr(err error) error {
	if errors.Is(err, broker.ErrNotFound) {
		return &broker.Error{Kind: broker.ErrNotFound, Op: "list queues",
			Hint: broker.Hintf("vhost `%s` not found by the management API: check the vhost in %s and that %s is the same broker", b.vhost, broker.OptBroker, broker.OptManagementURL)}
	}
	return translateErr("list queues", err)
}

// Queue describes one queue, including which queues dead-letter into it. A
// missing queue is ErrNotFound naming the queue, the vhost and the fix.
func (b *Broker) Queue(ctx context.Context, name string) (broker.Queue, error) {
	op := "describe queue `" + name + "`"
	var (
		mq        mgmtQueue
		all       []mgmtQueue
		bindings  []mgmtBinding
		exchanges []mgmtExchange
	)
	err := parallel(
		func() error {
			return b.mgmtQueue(ctx, name, queueStatColumns, &mq)
		},
		func() error {
			return b.mgmtDo(ctx, "GET", "/queues/"+b.vhostPath()+"?columns="+queueTopologyColumns, nil, &all)
		},
		func() error { return b.mgmtDo(ctx, "GET", "/bindings/"+b.vhostPath(), nil, &bindings) },
		func() error {
			return b.mgmtDo(ctx, "GET", "/exchanges/"+b.vhostPath()+"?columns=name,type", nil, &exchanges)
		},
	)
	if err != nil {
		if errors.Is(err, broker.ErrNotFound) && !errors.Is(err, errMgmtMissesQueue) {
			return broker.Queue{}, b.notFoundQueue(op, name)
		}
		return broker.Queue{}, translateErr(op, err)
	}
	major := b.serverMajor(ctx)
	q, dl := b.toQueue(&mq, major)
	if q.Kind != broker.KindStream {
		// The statistics are samples (see exactDepths): ask the queue.
		if n, _, err := b.inspect(ctx, name); err == nil {
			q.Depth = n
		}
	}
	qs := make([]broker.Queue, 0, len(all)+1)
	dls := make([]deadLetter, 0, len(all)+1)
	qs, dls = append(qs, q), append(dls, dl)
	for i := range all {
		if all[i].Name != name {
			q, dl := b.toQueue(&all[i], major)
			qs, dls = append(qs, q), append(dls, dl)
		}
	}
	resolveDeadLetters(qs, dls, bindings, exchanges)
	return qs[0], nil
}

// mgmtQueue reads one queue's columns from the management API. The API
// learns of a new queue from statistics events, a moment after the queue
// exists, and later still on a busy node: when it answers 404 for a queue
// that a passive declare finds, it is asked again for up to mgmtLag. A
// queue the API still does not know then is one it will not learn of (the
// management URL names another cluster or node): that fails with
// errMgmtMissesQueue, which names the management URL, not the queue name.
func (b *Broker) mgmtQueue(ctx context.Context, name, columns string, out *mgmtQueue) error {
	path := "/queues/" + b.vhostPath() + "/" + url.PathEscape(name) + "?columns=" + columns
	deadline := time.Now().Add(mgmtLag)
	for {
		err := b.mgmtDo(ctx, "GET", path, nil, out)
		if !errors.Is(err, broker.ErrNotFound) {
			return err
		}
		if _, _, ierr := b.inspect(ctx, name); ierr != nil {
			return err
		}
		if time.Now().After(deadline) {
			_, n := b.node()
			mgmtURL := n.mgmt.String()
			return &broker.Error{Kind: broker.ErrNotFound, Op: "read queue `" + name + "` from the management API", Err: errMgmtMissesQueue,
				Hint: broker.Hintf("queue `%s` exists on the broker but its management API (%s) has not known it on vhost `%s` for %s: check that %s names a node of the same cluster", name, mgmtURL, b.vhost, mgmtLag, broker.OptManagementURL)}
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// mgmtLag is how long the management API may lag behind a queue that
// exists.
var mgmtLag = 10 * time.Second

// errMgmtMissesQueue: the management API does not know a queue that AMQP
// finds.
var errMgmtMissesQueue = errors.New("the management API does not know the queue")

// inspect is a passive declare on a fresh channel: the exact number of
// ready messages and of consumers, or ErrNotFound.
//
// A quorum queue answers from the state of its leader, and answers 0 and 0
// when the leader does not reply within 250 ms: while it elects a leader,
// or on a busy node (rabbit_quorum_queue:stat/2). Taken at its word, such
// a zero would end a redrive that has barely begun, so a zero is checked
// (see checkZero).
func (b *Broker) inspect(ctx context.Context, name string) (messages, consumers int64, err error) {
	messages, consumers, err = b.declarePassive(ctx, name)
	if err != nil || messages > 0 || consumers > 0 {
		return messages, consumers, err
	}
	return b.checkZero(ctx, name)
}

func (b *Broker) declarePassive(ctx context.Context, name string) (messages, consumers int64, err error) {
	err = b.withChannel(ctx, func(ch *amqp.Channel) error {
		q, err := ch.QueueDeclarePassive(name, false, false, false, false, nil)
		if err != nil {
			return err
		}
		messages, consumers = int64(q.Messages), int64(q.Consumers)
		return nil
	})
	if errors.Is(err, broker.ErrNotFound) {
		err = b.notFoundQueue("open queue `"+name+"`", name)
	}
	return messages, consumers, err
}

// LeaderWait is how long a count of a quorum queue waits for the queue to
// have a leader again (a node lost, an election) before it fails.
var LeaderWait = time.Minute

// zeroRetries and zeroPause: how often, and how far apart, a zero from a
// quorum queue with a leader is asked again (a leader too busy to reply
// within 250 ms also reads as zero).
const (
	zeroRetries = 3
	zeroPause   = 50 * time.Millisecond
)

// checkZero confirms a passive declare's zero. For a quorum queue it asks
// the management API whether the queue has a leader: while it has none,
// it waits (up to LeaderWait) and then fails rather than call the queue
// empty; once it has one, it asks the queue again. Without the management
// API, the queue is asked again all the same.
func (b *Broker) checkZero(ctx context.Context, name string) (messages, consumers int64, err error) {
	if _, ok := b.notQuorum.Load(name); ok {
		return 0, 0, nil
	}
	deadline := time.Now().Add(LeaderWait)
	warned := false
	for {
		var mq mgmtQueue
		merr := b.mgmtDo(ctx, "GET", "/queues/"+b.vhostPath()+"/"+url.PathEscape(name)+"?columns=type,leader,members,online", nil, &mq)
		if merr == nil && mq.Type != "quorum" {
			b.notQuorum.Store(name, true)
			return 0, 0, nil
		}
		leader, _ := mq.Leader.(string)
		if merr != nil || (leader != "" && slices.Contains(mq.Online, leader)) {
			for i := 0; i < zeroRetries; i++ {
				if err := sleepCtx(ctx, zeroPause); err != nil {
					return 0, 0, err
				}
				messages, consumers, err = b.declarePassive(ctx, name)
				if err != nil || messages > 0 || consumers > 0 {
					return messages, consumers, err
				}
			}
			return 0, 0, nil
		}
		if !warned {
			warned = true
			b.log.Warn("waiting for the quorum queue to elect a leader", "queue", name, "online", len(mq.Online), "members", len(mq.Members), "wait", LeaderWait)
		}
		if time.Now().After(deadline) {
			return 0, 0, &broker.Error{Kind: broker.ErrUnreachable, Op: "count quorum queue `" + name + "`",
				Msg: fmt.Sprintf("it has had no leader for %s (%d of %d members online): RabbitMQ can neither count nor deliver its messages until a majority of its members is back; run the command again once the cluster has recovered", LeaderWait, len(mq.Online), len(mq.Members))}
		}
		if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
			return 0, 0, err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// DefaultExchangeName stands for the default exchange ("") in
// Queue.DeadLetterTarget, as the management API calls it.
const DefaultExchangeName = "amq.default"

// toQueue converts a management API queue. A dead-letter exchange that is
// the default exchange is reported as DefaultExchangeName.
func (b *Broker) toQueue(m *mgmtQueue, serverMajor int) (broker.Queue, deadLetter) {
	q := broker.Queue{
		System:           broker.RabbitMQ,
		Name:             m.Name,
		Vhost:            b.vhost,
		Kind:             queueKind(m.Type),
		InFlight:         m.MessagesUnacknowledged,
		Consumers:        m.Consumers,
		Bytes:            m.MessageBytesReady,
		Durable:          m.Durable,
		Arguments:        normalizeJSON(m.Arguments),
		ConsumerCapacity: m.ConsumerCapacity,
	}
	if q.ConsumerCapacity == nil {
		q.ConsumerCapacity = m.ConsumerUtilisation
	}
	if len(q.Arguments) == 0 {
		q.Arguments = nil
	}
	switch {
	case m.MessagesReady != nil:
		q.Depth = *m.MessagesReady
	case m.Messages != nil:
		q.Depth = *m.Messages
	}
	q.Policy = headerString(m.Policy)
	if op := headerString(m.OperatorPolicy); op != "" {
		if q.Policy != "" {
			q.Policy += "+"
		}
		q.Policy += op
	}
	dl := settingsOf(m.Arguments, m.EffectivePolicyDefinition, q.Kind == broker.KindQuorum, serverMajor)
	if dl.MessageTTL != nil {
		q.MessageTTL = time.Duration(max(*dl.MessageTTL, 0)) * time.Millisecond
	}
	q.MaxLength, q.MaxLengthBytes, q.Overflow = dl.MaxLength, dl.MaxLengthBytes, dl.Overflow
	if dl.DeadLetterSet {
		q.DeadLetterTarget, q.DeadLetterRoutingKey = dl.DeadLetterExchange, dl.DeadLetterRoutingKey
		if dl.DeadLetterExchange == "" {
			q.DeadLetterTarget = DefaultExchangeName
		}
	}
	if dl.Limited {
		q.DeliveryLimit, q.DeliveryLimitDefault = dl.Limit, dl.LimitDefault
		if !dl.DeadLetterSet {
			// Past the limit a message is dead-lettered; with no
			// dead-letter exchange RabbitMQ drops it without a trace.
			q.DropsAfter = dl.Limit
		}
	}
	if len(m.Members) > 0 {
		q.Leader = headerString(m.Leader)
		q.Members = append([]string(nil), m.Members...)
		q.Online = append([]string{}, m.Online...)
		sort.Strings(q.Members)
		sort.Strings(q.Online)
	}
	return q, dl
}

func queueKind(t string) broker.QueueKind {
	switch t {
	case "quorum":
		return broker.KindQuorum
	case "stream":
		return broker.KindStream
	default:
		return broker.KindClassic
	}
}

// serverMajor is the RabbitMQ major version (cached), or 0 when unknown.
func (b *Broker) serverMajor(ctx context.Context) int {
	b.mu.Lock()
	v := b.major
	b.mu.Unlock()
	if v != 0 {
		return v
	}
	_, _ = b.ServerVersion(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.major
}

// ServerVersion is the RabbitMQ version the management API reports
// ("4.0.5"), asked once.
func (b *Broker) ServerVersion(ctx context.Context) (string, error) {
	b.mu.Lock()
	v := b.version
	b.mu.Unlock()
	if v != "" {
		return v, nil
	}
	var ov struct {
		Version string `json:"rabbitmq_version"`
	}
	if err := b.mgmtDo(ctx, "GET", "/overview?columns=rabbitmq_version", nil, &ov); err != nil {
		return "", translateErr("read the server version", err)
	}
	major := rabbitrules.ParseVersion(ov.Version).Major
	b.mu.Lock()
	b.version, b.major = ov.Version, major
	b.mu.Unlock()
	return ov.Version, nil
}
