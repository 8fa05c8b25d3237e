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
	type pub struct {
		msg      int
		exchange string
		key      string
		p        amqp.Publishing
		match    uint64
		// requeue: published without mandatory, never returned, so never
		// matched.
		requeue bool
	}
	var pubs []pub
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
			pubs = append(pubs, pub{msg: i, exchange: "", key: o.Dest.Queue, p: p, requeue: o.Requeue})
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
				pubs = append(pubs, pub{msg: i, exchange: ex, key: k, p: p})
			}
		default:
			results[i] = &broker.Error{Kind: broker.ErrUnsupported, Op: "publish message " + o.Message.ID,
				Msg: fmt.Sprintf("destination %s cannot be published to on RabbitMQ: resolve it to a queue or an exchange first", o.Dest)}
		}
	}
	// Publishing to a missing exchange closes the channel (404) and would
	// fail the whole batch: check each exchange once, on its own channel.
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
				return results, translateErr("publish", err)
			}
			exchanges[ex] = &broker.Error{Kind: broker.ErrNotFound, Op: "publish",
				Msg: fmt.Sprintf("exchange `%s` not found on vhost `%s`: check the destination, or declare it with `dlq topology apply`", ex, b.vhost)}
		}
	}
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
	pubs = kept
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
	ch, confirms, returns, closed := cc.ch, cc.confirms, cc.returns, cc.closed
	// Back to the pool only when every publish of this call was settled;
	// after any failure the channel is closed.
	settled := false
	defer func() {
		if settled {
			b.putConfirmChannel(cc)
		} else {
			_ = ch.Close()
		}
	}()

	var (
		mu       sync.Mutex
		cond     = sync.NewCond(&mu)
		inflight = map[uint64]uint64{} // match key → seq
		bySeq    = make(map[uint64]int, len(pubs))
		returned = map[uint64]amqp.Return{}
		failed   bool
		pubErr   error
		sent     int
	)
	pubDone := make(chan struct{})
	go func() {
		defer close(pubDone)
		for i := range pubs {
			p := &pubs[i]
			mu.Lock()
			for !failed && !p.requeue {
				if _, busy := inflight[p.match]; !busy {
					break
				}
				cond.Wait()
			}
			if failed {
				mu.Unlock()
				return
			}
			seq := ch.GetNextPublishSeqNo()
			if !p.requeue {
				inflight[p.match] = seq
			}
			bySeq[seq] = i
			sent++
			mu.Unlock()
			if err := ch.Publish(p.exchange, p.key, !p.requeue, false, p.p); err != nil {
				mu.Lock()
				pubErr, failed = err, true
				sent--
				if !p.requeue {
					delete(inflight, p.match)
				}
				delete(bySeq, seq)
				cond.Broadcast()
				mu.Unlock()
				return
			}
		}
	}()
	finishedPublishing := pubDone
	stop := func() {
		mu.Lock()
		failed = true
		cond.Broadcast()
		mu.Unlock()
		_ = ch.Close() // unblocks a publish stuck on a blocked connection
		<-finishedPublishing
	}

	pubErrs := make([]error, len(pubs))
	confirmed := 0
	// takeReturn reports false for a return that matches no publish in
	// flight: then no confirm of this call can be trusted (one of them
	// is a returned message).
	takeReturn := func(r amqp.Return) bool {
		m := matchKey(seed, r.Exchange, r.RoutingKey, &amqp.Publishing{MessageId: r.MessageId, CorrelationId: r.CorrelationId, Headers: r.Headers, Body: r.Body})
		mu.Lock()
		defer mu.Unlock()
		seq, ok := inflight[m]
		if ok {
			returned[seq] = r
		}
		return ok
	}
	unmatched := func(r amqp.Return) error {
		return &broker.Error{Kind: broker.ErrUnroutable, Op: "publish",
			Msg: fmt.Sprintf("a message came back unroutable from exchange `%s` with routing key `%s` and could not be told apart from the others in flight: none of this batch is taken as delivered", r.Exchange, r.RoutingKey)}
	}
	// onReturn takes a message the broker returned; an error ends the batch.
	onReturn := func(r amqp.Return, ok bool) error {
		if !ok {
			// The channel closed: its returns channel gives zero values,
			// which are no returns.
			return translateErr("publish", closeErrOf(closed))
		}
		if !takeReturn(r) {
			return unmatched(r)
		}
		return nil
	}
	pubFinished := false
	for {
		mu.Lock()
		finished := pubFinished && confirmed == sent
		mu.Unlock()
		if finished {
			break
		}
		select {
		case r, ok := <-returns:
			if err := onReturn(r, ok); err != nil {
				stop()
				return results, err
			}
		case c, ok := <-confirms:
			if !ok {
				stop()
				return results, translateErr("publish", closeErrOf(closed))
			}
			// The return of this message, if any, arrived before its confirm.
			for drained := false; !drained; {
				select {
				case r, ok := <-returns:
					if err := onReturn(r, ok); err != nil {
						stop()
						return results, err
					}
				default:
					drained = true
				}
			}
			mu.Lock()
			i, ok := bySeq[c.DeliveryTag]
			if !ok {
				mu.Unlock()
				continue
			}
			p := &pubs[i]
			switch r, ret := returned[c.DeliveryTag]; {
			case ret:
				dest := "queue `" + p.key + "`"
				if p.exchange != "" {
					dest = fmt.Sprintf("exchange `%s` with routing key `%s`", p.exchange, p.key)
				}
				pubErrs[i] = &broker.Error{Kind: broker.ErrUnroutable, Op: "publish message " + msgs[p.msg].Message.ID,
					Msg: fmt.Sprintf("%s routed it to no queue (%d %s): check the destination and its bindings", dest, r.ReplyCode, r.ReplyText)}
				delete(returned, c.DeliveryTag)
			case !c.Ack:
				pubErrs[i] = &broker.Error{Kind: broker.ErrConflict, Op: "publish message " + msgs[p.msg].Message.ID,
					Msg: "the broker refused it (nack: a full queue with overflow reject-publish, or an internal error)"}
			}
			delete(bySeq, c.DeliveryTag)
			if !p.requeue && inflight[p.match] == c.DeliveryTag {
				delete(inflight, p.match)
			}
			confirmed++
			cond.Broadcast()
			mu.Unlock()
		case e := <-closed:
			stop()
			if e == nil {
				return results, translateErr("publish", amqp.ErrClosed)
			}
			return results, translateErr("publish", e)
		case <-ctx.Done():
			stop()
			return results, fmt.Errorf("publish: %w", ctx.Err())
		case <-pubDone:
			pubDone, pubFinished = nil, true
			mu.Lock()
			err := pubErr
			mu.Unlock()
			if err != nil {
				stop()
				return results, translateErr("publish", err)
			}
		}
	}
	for i, p := range pubs {
		if pubErrs[i] != nil && results[p.msg] == nil {
			results[p.msg] = pubErrs[i]
		}
	}
	settled = true
	return results, nil
}

func closeErrOf(closed chan *amqp.Error) error {
	select {
	case e := <-closed:
		if e != nil {
			return e
		}
	default:
	}
	return amqp.ErrClosed
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
