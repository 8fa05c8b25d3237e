package rabbitmq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

// Server-side moves on RabbitMQ are dynamic shovels declared through the
// management API (the shovel and shovel-management plugins must be enabled):
// source the DLQ, ack-mode on-confirm (the source message is acknowledged
// only after the destination confirmed it), src-delete-after queue-length
// (the shovel moves as many messages as the queue held when it started, then
// deletes itself). Both ends use a direct connection to the local node.

var (
	_ broker.ServerSideMover = (*Broker)(nil)
	_ broker.RouteChecker    = (*Broker)(nil)
)

// shovelPrefix marks the shovels dlq declares; MoveStatus lists only these.
const shovelPrefix = "dlq-move-"

type shovelValue struct {
	SrcProtocol           string `json:"src-protocol"`
	SrcURI                string `json:"src-uri"`
	SrcQueue              string `json:"src-queue"`
	SrcDeleteAfter        any    `json:"src-delete-after,omitempty"`
	SrcPrefetchCount      int    `json:"src-prefetch-count,omitempty"`
	DestProtocol          string `json:"dest-protocol"`
	DestURI               string `json:"dest-uri"`
	DestQueue             string `json:"dest-queue,omitempty"`
	DestExchange          string `json:"dest-exchange,omitempty"`
	DestExchangeKey       string `json:"dest-exchange-key,omitempty"`
	AckMode               string `json:"ack-mode"`
	DestAddForwardHeaders bool   `json:"dest-add-forward-headers"`
	DestAddTimestampHdr   bool   `json:"dest-add-timestamp-header"`
	ReconnectDelay        int    `json:"reconnect-delay,omitempty"`
}

type shovelParam struct {
	Name  string      `json:"name"`
	Value shovelValue `json:"value"`
}

type shovelStatus struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Reason any    `json:"reason"`
}

// localURI is a direct connection to this node's vhost.
func (b *Broker) localURI() string {
	return "amqp:///" + url.PathEscape(b.vhost)
}

// startTimeout bounds the request that declares a shovel.
const startTimeout = 30 * time.Second

// StartMove declares a dynamic shovel that moves every message queue holds
// now to dest. ToOrigin is accepted when queue has exactly one dead-letter
// source queue (a shovel has one fixed destination; messages from several
// origins need a client-side redrive).
func (b *Broker) StartMove(ctx context.Context, queue string, dest broker.Destination, opts broker.MoveOptions) (broker.MoveTask, error) {
	op := "start shovel from `" + queue + "`"
	if opts.MaxPerSecond > 0 {
		return broker.MoveTask{}, broker.Errorf(broker.ErrUnsupported, op, "a RabbitMQ shovel has no rate limit: drop %s, or drop %s and use dlq's own %s", broker.OptRate, broker.OptServerSide, broker.OptRate)
	}
	q, err := b.Queue(ctx, queue)
	if err != nil {
		return broker.MoveTask{}, err
	}
	v := shovelValue{SrcProtocol: "amqp091", SrcURI: b.localURI(), SrcQueue: queue, SrcDeleteAfter: "queue-length",
		DestProtocol: "amqp091", DestURI: b.localURI(), AckMode: "on-confirm", ReconnectDelay: 5}
	if err := shovelTo(&v, dest, q, op); err != nil {
		return broker.MoveTask{}, err
	}
	// The management API's depth is sampled (collect_statistics_interval):
	// ask the queue itself, or a queue just filled would look empty.
	if n, _, err := b.inspect(ctx, queue); err == nil {
		q.Depth = n
	}
	if q.Depth == 0 {
		// src-delete-after 0 would never end; there is nothing to move.
		depth := int64(0)
		return broker.MoveTask{Source: queue, Destination: shovelDest(v), State: broker.MoveCompleted, Moved: &depth, ToMove: &depth, Started: time.Now().UTC()}, nil
	}
	name, err := b.putShovel(ctx, queue, v, op)
	if err != nil {
		return broker.MoveTask{}, err
	}
	toMove := q.Depth
	return broker.MoveTask{Handle: name, Source: queue, Destination: shovelDest(v), State: broker.MoveRunning,
		ToMove: &toMove, Remaining: &toMove, Started: time.Now().UTC(), Lingers: true}, nil
}

// shovelTo sets the destination of v: dest, where ToOrigin is the one
// dead-letter source of q.
func shovelTo(v *shovelValue, dest broker.Destination, q broker.Queue, op string) error {
	switch dest.Kind {
	case broker.ToOrigin, "":
		if len(q.DeadLetterSources) != 1 {
			return broker.Errorf(broker.ErrConflict, op,
				"a shovel needs one destination and `%s` has %d dead-letter sources (%s): name one with %s, or drop %s to send each message to its own origin",
				q.Name, len(q.DeadLetterSources), strings.Join(q.DeadLetterSources, ", "), broker.OptTo.With("queue:NAME"), broker.OptServerSide)
		}
		v.DestQueue = q.DeadLetterSources[0]
	case broker.ToQueue:
		v.DestQueue = dest.Queue
	case broker.ToExchange:
		if len(dest.RoutingKeys) > 1 {
			return broker.Errorf(broker.ErrUnsupported, op, "a shovel publishes with one routing key, not %d", len(dest.RoutingKeys))
		}
		v.DestExchange = dest.Exchange
		if len(dest.RoutingKeys) == 1 {
			v.DestExchangeKey = dest.RoutingKeys[0]
		}
	default:
		return broker.Errorf(broker.ErrUnsupported, op, "a shovel moves to a queue or an exchange on this broker, not to %s", dest)
	}
	return nil
}

// putShovel declares a dynamic shovel from queue with value v and returns
// its name.
func (b *Broker) putShovel(ctx context.Context, queue string, v shovelValue, op string) (string, error) {
	var r [4]byte
	_, _ = rand.Read(r[:])
	name := shovelPrefix + queue + "-" + hex.EncodeToString(r[:])
	path := "/parameters/shovel/" + b.vhostPath() + "/" + url.PathEscape(name)
	// Once sent, the shovel may run whether or not the answer arrives: an
	// interrupt must not cut the answer off, or dlq could not name the
	// shovel it declared. The request runs to its end, bounded on its own.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	if err := b.mgmtDo(pctx, "PUT", path, map[string]any{"value": v}, nil); err != nil {
		if errors.Is(err, broker.ErrNotFound) {
			return "", broker.Errorf(broker.ErrUnsupported, op, "the management API has no shovels: enable the rabbitmq_shovel and rabbitmq_shovel_management plugins, or drop %s", broker.OptServerSide)
		}
		return "", fmt.Errorf("%s: %w", op, err)
	}
	return name, nil
}

func shovelDest(v shovelValue) string {
	if v.DestQueue != "" {
		return "queue:" + v.DestQueue
	}
	d := broker.Destination{Kind: broker.ToExchange, Exchange: v.DestExchange}
	if v.DestExchangeKey != "" {
		d.RoutingKeys = []string{v.DestExchangeKey}
	}
	return d.String()
}

// MoveStatus lists the shovels dlq declared on queue. A shovel that finished
// has deleted itself and is no longer listed.
func (b *Broker) MoveStatus(ctx context.Context, queue string) ([]broker.MoveTask, error) {
	var params []shovelParam
	if err := b.mgmtDo(ctx, "GET", "/parameters/shovel/"+b.vhostPath(), nil, &params); err != nil {
		if errors.Is(err, broker.ErrNotFound) {
			return nil, nil
		}
		return nil, fmt.Errorf("list shovels: %w", err)
	}
	var statuses []shovelStatus
	if err := b.mgmtDo(ctx, "GET", "/shovels/"+b.vhostPath(), nil, &statuses); err != nil && !errors.Is(err, broker.ErrNotFound) {
		return nil, fmt.Errorf("shovel status: %w", err)
	}
	state := map[string]shovelStatus{}
	for _, s := range statuses {
		state[s.Name] = s
	}
	var remaining *int64
	if q, err := b.Queue(ctx, queue); err == nil {
		d := q.Depth
		remaining = &d
	}
	var tasks []broker.MoveTask
	for _, p := range params {
		if !strings.HasPrefix(p.Name, shovelPrefix) || p.Value.SrcQueue != queue {
			continue
		}
		t := broker.MoveTask{Handle: p.Name, Source: queue, Destination: shovelDest(p.Value), State: broker.MoveRunning, Remaining: remaining, Lingers: true}
		if s, ok := state[p.Name]; ok && s.State == "terminated" {
			t.State = broker.MoveFailed
			t.Failure = fmt.Sprint(s.Reason)
		}
		tasks = append(tasks, t)
	}
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].Handle > tasks[j].Handle })
	return tasks, nil
}

// CancelMove deletes the shovel; messages it moved stay moved, a message it
// was moving is either confirmed and acknowledged or stays in the source.
func (b *Broker) CancelMove(ctx context.Context, queue, handle string) (broker.MoveTask, error) {
	if !strings.HasPrefix(handle, shovelPrefix) {
		return broker.MoveTask{}, broker.Errorf(broker.ErrNotFound, "cancel shovel", "%q is not a shovel dlq started: see %s", handle, broker.Cmd("redrive status "+queue))
	}
	path := "/parameters/shovel/" + b.vhostPath() + "/" + url.PathEscape(handle)
	if err := b.mgmtDo(ctx, "DELETE", path, nil, nil); err != nil {
		if errors.Is(err, broker.ErrNotFound) {
			return broker.MoveTask{}, broker.Errorf(broker.ErrNotFound, "cancel shovel", "no shovel %q (a finished shovel removes itself)", handle)
		}
		return broker.MoveTask{}, fmt.Errorf("cancel shovel %s: %w", handle, err)
	}
	t := broker.MoveTask{Handle: handle, Source: queue, State: broker.MoveCancelled}
	if q, err := b.Queue(ctx, queue); err == nil {
		d := q.Depth
		t.Remaining = &d
	}
	return t, nil
}

// Routable reports whether a publish to dest would reach a queue, from the
// bindings the management API lists (exchange-to-exchange bindings count as
// routable). An exchange given without routing keys is routable when
// anything is bound to it.
func (b *Broker) Routable(ctx context.Context, dest broker.Destination) (bool, error) {
	switch dest.Kind {
	case broker.ToQueue:
		return b.queueExists(ctx, dest.Queue)
	case broker.ToExchange:
	default:
		return true, nil
	}
	if dest.Exchange == "" {
		// The default exchange routes a key to the queue of that name;
		// without keys each message brings its own.
		if len(dest.RoutingKeys) == 0 {
			return true, nil
		}
		for _, k := range dest.RoutingKeys {
			if ok, err := b.queueExists(ctx, k); ok || err != nil {
				return ok, err
			}
		}
		return false, nil
	}
	var ex mgmtExchange
	if err := b.mgmtDo(ctx, "GET", "/exchanges/"+b.vhostPath()+"/"+url.PathEscape(dest.Exchange), nil, &ex); err != nil {
		if errors.Is(err, broker.ErrNotFound) {
			return false, nil
		}
		return false, err
	}
	var binds []mgmtBinding
	if err := b.mgmtDo(ctx, "GET", "/exchanges/"+b.vhostPath()+"/"+url.PathEscape(dest.Exchange)+"/bindings/source", nil, &binds); err != nil {
		return false, err
	}
	if len(dest.RoutingKeys) == 0 {
		// No key yet (each message will bring its own): it can route if
		// anything is bound to it.
		return len(binds) > 0, nil
	}
	for _, bd := range binds {
		if routes(ex.Type, bd.RoutingKey, dest.RoutingKeys) {
			return true, nil
		}
	}
	return false, nil
}

// queueExists asks the queue itself (a passive declare).
func (b *Broker) queueExists(ctx context.Context, name string) (bool, error) {
	_, _, err := b.inspect(ctx, name)
	if errors.Is(err, broker.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

var _ broker.MoveSettler = (*Broker)(nil)

// leftWait bounds how long Left waits for a stopped shovel's consumer to go.
const leftWait = 10 * time.Second

// Left waits until queue has no consumer (a shovel that deleted itself
// lets go of its deliveries when its channel closes: refused messages it
// had not acknowledged are back only then), up to leftWait, and returns
// its ready messages, asked of the queue itself (the management API's
// figures are sampled).
func (b *Broker) Left(ctx context.Context, queue string) (int64, error) {
	return b.pollQueue(ctx, queue, leftWait, func(_, consumers int64) bool { return consumers == 0 })
}
