package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
)

var _ broker.Publisher = (*Broker)(nil)

// Publish sends msgs on a dedicated confirm-mode channel with mandatory set
// (but for Requeue messages, which are never returned),
// pipelined: every message is written at once and the confirms are awaited
// together. It returns one error per message: nil once the broker confirmed
// every copy of it (one per routing key), ErrUnroutable when a copy came back
// with basic.return (no queue bound), ErrNotFound for an exchange that does
// not exist (checked before publishing, since publishing to one would close
// the channel), or the broker's nack. The second result is a failure of the
// whole call (channel or connection lost, ctx cancelled): then no message
// may be taken as confirmed.
//
// Returns are matched to their message exactly: a return reaches the client
// before the confirm of its message, and two copies that a return could not
// tell apart (same exchange, routing key, message-id, correlation-id and
// body) are never in flight together — the second waits for the first's
// confirm.
//
// While the broker blocks the connection (connection.blocked, a memory or
// disk alarm) Publish waits, and FlowWatcher callbacks fire; it does not
// fail. ctx bounds the wait.
func (b *Broker) Publish(ctx context.Context, msgs []broker.Outgoing) ([]error, error) {
	results := make([]error, len(msgs))
	pubs, exchanges := b.publications(msgs, results)
	if err := b.checkExchanges(ctx, exchanges); err != nil {
		return results, err
	}
	pubs = toKnownExchanges(pubs, exchanges, results)
	if len(pubs) == 0 {
		return results, nil
	}
	// Keys are compared only within this call.
	seed := maphash.MakeSeed()
	for i := range pubs {
		if !pubs[i].requeue {
			pubs[i].match = matchKey(seed, pubs[i].exchange, pubs[i].key, &pubs[i].p)
		}
	}

	if err := b.waitUnblocked(ctx); err != nil {
		return results, err
	}
	cc, err := b.getConfirmChannel(ctx)
	if err != nil {
		return results, err
	}
	// Back to the pool only when every publish of this call was settled;
	// after any failure the channel is closed.
	settled := false
	defer func() {
		if settled {
			b.putConfirmChannel(cc)
		} else {
			_ = cc.ch.Close()
		}
	}()
	pubErrs, err := publishConfirmed(ctx, cc, msgs, pubs, seed)
	if err != nil {
		return results, err
	}
	for i, p := range pubs {
		if pubErrs[i] != nil && results[p.msg] == nil {
			results[p.msg] = pubErrs[i]
		}
	}
	settled = true
	return results, nil
}

// publication is one copy of a message to publish: to a queue, or to an
// exchange with one of its routing keys.
type publication struct {
	msg      int
	exchange string
	key      string
	p        amqp.Publishing
	match    uint64
	// requeue: published without mandatory, never returned, so never
	// matched.
	requeue bool
}

// publications turns msgs into the copies to publish, in order, and names
// the exchanges they go to. A message that cannot be published gets its
// error in results and no copy.
func (b *Broker) publications(msgs []broker.Outgoing, results []error) ([]publication, map[string]error) {
	var pubs []publication
	exchanges := map[string]error{}
	for i, o := range msgs {
		if o.Message == nil {
			results[i] = fmt.Errorf("publish: message %d is empty", i)
			continue
		}
		p, err := b.toPublishing(o.Message)
		if err != nil {
			results[i] = fmt.Errorf("publish message %s: %w", o.Message.ID, err)
			continue
		}
		switch o.Dest.Kind {
		case broker.ToQueue:
			if o.Dest.Queue == "" {
				results[i] = fmt.Errorf("publish message %s: destination queue has no name", o.Message.ID)
				continue
			}
			pubs = append(pubs, publication{msg: i, exchange: "", key: o.Dest.Queue, p: p, requeue: o.Requeue})
		case broker.ToExchange:
			ex := o.Dest.Exchange
			if ex == DefaultExchangeName {
				ex = ""
			}
			if ex != "" {
				exchanges[ex] = nil
			}
			keys := o.Dest.RoutingKeys
			if len(keys) == 0 {
				keys = []string{""}
			}
			for _, k := range keys {
				pubs = append(pubs, publication{msg: i, exchange: ex, key: k, p: p})
			}
		default:
			results[i] = &broker.Error{Kind: broker.ErrUnsupported, Op: "publish message " + o.Message.ID,
				Msg: fmt.Sprintf("destination %s cannot be published to on RabbitMQ: resolve it to a queue or an exchange first", o.Dest)}
		}
	}
	return pubs, exchanges
}

// checkExchanges sets the error of each exchange that does not exist.
// Publishing to a missing exchange closes the channel (404) and would fail
// the whole batch: each exchange is checked once, on its own channel. The
// error is a failure to check, which fails the whole call.
func (b *Broker) checkExchanges(ctx context.Context, exchanges map[string]error) error {
	for ex := range exchanges {
		if b.exchangeKnown(ex) {
			continue
		}
		err := b.withChannel(ctx, func(ch *amqp.Channel) error {
			return ch.ExchangeDeclarePassive(ex, "direct", false, false, false, false, nil)
		})
		if err == nil {
			b.exchangeSeen(ex)
		}
		if err != nil {
			if !errors.Is(err, broker.ErrNotFound) {
				return translateErr("publish", err)
			}
			exchanges[ex] = &broker.Error{Kind: broker.ErrNotFound, Op: "publish",
				Msg: fmt.Sprintf("exchange `%s` not found on vhost `%s`: check the destination, or declare it with `dlq topology apply`", ex, b.vhost)}
		}
	}
	return nil
}

// toKnownExchanges drops the copies to a missing exchange; their message
// gets the exchange's error.
func toKnownExchanges(pubs []publication, exchanges map[string]error, results []error) []publication {
	kept := pubs[:0]
	for _, p := range pubs {
		if err := exchanges[p.exchange]; err != nil && p.exchange != "" {
			if results[p.msg] == nil {
				results[p.msg] = err
			}
			continue
		}
		kept = append(kept, p)
	}
	return kept
}

// pipeline is one Publish call's publishes in flight on a confirm channel:
// a goroutine writes them (publishAll) while the caller settles their
// confirms (publishConfirmed). mu guards every field below it.
type pipeline struct {
	cc   *confirmChannel
	pubs []publication
	seed maphash.Seed
	// done is closed when publishAll has returned.
	done chan struct{}

	mu       sync.Mutex
	cond     *sync.Cond
	inflight map[uint64]uint64 // match key → seq
	bySeq    map[uint64]int
	returned map[uint64]amqp.Return
	failed   bool
	pubErr   error
	sent     int
}

// publishAll writes every publish, each one only once no publish that a
// return could not tell apart from it is in flight. It stops at the first
// failure (its own or stop's).
func (pl *pipeline) publishAll() {
	defer close(pl.done)
	mu, cond, ch := &pl.mu, pl.cond, pl.cc.ch
	for i := range pl.pubs {
		p := &pl.pubs[i]
		mu.Lock()
		for !pl.failed && !p.requeue {
			if _, busy := pl.inflight[p.match]; !busy {
				break
			}
			cond.Wait()
		}
		if pl.failed {
			mu.Unlock()
			return
		}
		seq := ch.GetNextPublishSeqNo()
		if !p.requeue {
			pl.inflight[p.match] = seq
		}
		pl.bySeq[seq] = i
		pl.sent++
		mu.Unlock()
		if err := ch.Publish(p.exchange, p.key, !p.requeue, false, p.p); err != nil {
			mu.Lock()
			pl.pubErr, pl.failed = err, true
			pl.sent--
			if !p.requeue {
				delete(pl.inflight, p.match)
			}
			delete(pl.bySeq, seq)
			cond.Broadcast()
			mu.Unlock()
			return
		}
	}
}

// stop ends publishing and waits until publishAll has returned.
func (pl *pipeline) stop() {
	pl.mu.Lock()
	pl.failed = true
	pl.cond.Broadcast()
	pl.mu.Unlock()
	_ = pl.cc.ch.Close() // unblocks a publish stuck on a blocked connection
	<-pl.done
}

// takeReturn reports false for a return that matches no publish in
// flight: then no confirm of this call can be trusted (one of them is a
// returned message).
func (pl *pipeline) takeReturn(r amqp.Return) bool {
	m := matchKey(pl.seed, r.Exchange, r.RoutingKey, &amqp.Publishing{MessageId: r.MessageId, CorrelationId: r.CorrelationId, Headers: r.Headers, Body: r.Body})
	pl.mu.Lock()
	defer pl.mu.Unlock()
	seq, ok := pl.inflight[m]
	if ok {
		pl.returned[seq] = r
	}
	return ok
}

// onReturn takes a message the broker returned; an error ends the batch.
func (pl *pipeline) onReturn(r amqp.Return, ok bool) error {
	if !ok {
		// The channel closed: its returns channel gives zero values,
		// which are no returns.
		return translateErr("publish", pl.cc.closeErr())
	}
	if !pl.takeReturn(r) {
		return &broker.Error{Kind: broker.ErrUnroutable, Op: "publish",
			Msg: fmt.Sprintf("a message came back unroutable from exchange `%s` with routing key `%s` and could not be told apart from the others in flight: none of this batch is taken as delivered", r.Exchange, r.RoutingKey)}
	}
	return nil
}

// settle records the confirm c (whose returns were taken) in pubErrs: nil
// for a copy the broker took, ErrUnroutable for one it returned,
// ErrConflict for one it refused, and lets publishAll go on. It reports
// whether c was one of this call's.
func (pl *pipeline) settle(c amqp.Confirmation, msgs []broker.Outgoing, pubErrs []error) bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	i, ok := pl.bySeq[c.DeliveryTag]
	if !ok {
		return false
	}
	p := &pl.pubs[i]
	switch r, ret := pl.returned[c.DeliveryTag]; {
	case ret:
		dest := "queue `" + p.key + "`"
		if p.exchange != "" {
			dest = fmt.Sprintf("exchange `%s` with routing key `%s`", p.exchange, p.key)
		}
		pubErrs[i] = &broker.Error{Kind: broker.ErrUnroutable, Op: "publish message " + msgs[p.msg].Message.ID,
			Msg: fmt.Sprintf("%s routed it to no queue (%d %s): check the destination and its bindings", dest, r.ReplyCode, r.ReplyText)}
		delete(pl.returned, c.DeliveryTag)
	case !c.Ack:
		pubErrs[i] = &broker.Error{Kind: broker.ErrConflict, Op: "publish message " + msgs[p.msg].Message.ID,
			Msg: "the broker refused it (nack: a full queue with overflow reject-publish, or an internal error)"}
	}
	delete(pl.bySeq, c.DeliveryTag)
	if !p.requeue && pl.inflight[p.match] == c.DeliveryTag {
		delete(pl.inflight, p.match)
	}
	pl.cond.Broadcast()
	return true
}

// publishConfirmed publishes pubs on cc, pipelined, and waits for every
// confirm. It returns one error per publish (nil: confirmed), or an error
// of the whole call, after which no publish may be taken as confirmed.
func publishConfirmed(ctx context.Context, cc *confirmChannel, msgs []broker.Outgoing, pubs []publication, seed maphash.Seed) ([]error, error) {
	confirms, returns, closed := cc.confirms, cc.returns, cc.closed
	pl := &pipeline{cc: cc, pubs: pubs, seed: seed, done: make(chan struct{}),
		inflight: map[uint64]uint64{}, bySeq: make(map[uint64]int, len(pubs)), returned: map[uint64]amqp.Return{}}
	pl.cond = sync.NewCond(&pl.mu)
	go pl.publishAll()
	pubDone := pl.done

	pubErrs := make([]error, len(pubs))
	confirmed := 0
	pubFinished := false
	for {
		pl.mu.Lock()
		finished := pubFinished && confirmed == pl.sent
		pl.mu.Unlock()
		if finished {
			break
		}
		select {
		case r, ok := <-returns:
			if err := pl.onReturn(r, ok); err != nil {
				pl.stop()
				return nil, err
			}
		case c, ok := <-confirms:
			if !ok {
				pl.stop()
				return nil, translateErr("publish", cc.closeErr())
			}
			// The return of this message, if any, arrived before its confirm.
			for drained := false; !drained; {
				select {
				case r, ok := <-returns:
					if err := pl.onReturn(r, ok); err != nil {
						pl.stop()
						return nil, err
					}
				default:
					drained = true
				}
			}
			if pl.settle(c, msgs, pubErrs) {
				confirmed++
			}
		case e := <-closed:
			pl.stop()
			if e == nil {
				return nil, translateErr("publish", amqp.ErrClosed)
			}
			return nil, translateErr("publish", e)
		case <-ctx.Done():
			pl.stop()
			return nil, fmt.Errorf("publish: %w", ctx.Err())
		case <-pubDone:
			pubDone, pubFinished = nil, true
			pl.mu.Lock()
			err := pl.pubErr
			pl.mu.Unlock()
			if err != nil {
				pl.stop()
				return nil, translateErr("publish", err)
			}
		}
	}
	return pubErrs, nil
}

// matchKey identifies a publish well enough to match a basic.return to it:
// exchange, routing key, message-id, correlation-id, body, and the string
// values in its headers (with their names and nesting). Strings come back
// in a return exactly as sent, so a header that differs per message (such
// as the id in the x-dlq-redrive record) keeps identical bodies from
// waiting on each other's confirms.
func matchKey(seed maphash.Seed, exchange, key string, p *amqp.Publishing) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	for _, s := range []string{exchange, key, p.MessageId, p.CorrelationId} {
		h.WriteString(s)
		h.WriteByte(0)
	}
	h.Write(p.Body)
	return h.Sum64() ^ hashStrings(seed, p.Headers, 0)
}

// hashStrings combines the hashes of the string values of t and of its
// nested tables, each with its key and depth. The combination is a sum, so
// the map's order does not matter and nothing is sorted or allocated.
func hashStrings(seed maphash.Seed, t amqp.Table, depth byte) uint64 {
	var sum uint64
	for k, v := range t {
		switch v := v.(type) {
		case string:
			sum += fieldHash(seed, depth, k, 0, v)
		case amqp.Table:
			sum += fieldHash(seed, depth, k, 1, "") * (hashStrings(seed, v, depth+1) | 1)
		}
	}
	return sum
}

// fieldHash hashes one header: its depth, key, kind and string value.
func fieldHash(seed maphash.Seed, depth byte, k string, kind byte, v string) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	h.WriteByte(depth)
	h.WriteString(k)
	h.WriteByte(kind)
	h.WriteString(v)
	return h.Sum64()
}
