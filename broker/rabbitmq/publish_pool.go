package rabbitmq

import (
	"context"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// publishPool keeps confirm-mode channels between Publish calls: opening a
// channel and selecting confirms costs round trips that a redrive would
// otherwise pay for every window. A channel goes back to the pool only
// after a call that ended with every publish confirmed (so nothing of it is
// pending); one that failed is closed. It also remembers exchanges that
// were found to exist, for a short while.
type publishPool struct {
	mu        sync.Mutex
	free      []*confirmChannel
	exchanges map[string]time.Time // exchange → when it was seen to exist
}

// maxPooledChannels bounds the idle confirm channels kept.
const maxPooledChannels = 8

// exchangeTTL is how long an exchange seen to exist is not checked again.
// One deleted meanwhile makes the next publish fail as a whole (the broker
// closes the channel), which no message survives as confirmed.
const exchangeTTL = 5 * time.Second

// confirmChannel is a channel in confirm mode with its listeners. Publish
// takes one from the pool for each call; the rotator of a rotate peek opens
// its own, with a window's buffers.
type confirmChannel struct {
	ch       *amqp.Channel
	confirms chan amqp.Confirmation
	returns  chan amqp.Return
	closed   chan *amqp.Error
}

// confirmBuffer is the confirmations a channel's listener holds before the
// connection's reader would wait for Publish to take them.
const confirmBuffer = 1 << 14

// getConfirmChannel returns an idle confirm channel or opens one.
func (b *Broker) getConfirmChannel(ctx context.Context) (*confirmChannel, error) {
	p := &b.pubPool
	p.mu.Lock()
	for len(p.free) > 0 {
		cc := p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		if !cc.ch.IsClosed() {
			p.mu.Unlock()
			return cc, nil
		}
	}
	p.mu.Unlock()
	ch, err := b.channel(ctx)
	if err != nil {
		return nil, err
	}
	cc, err := confirmMode(ch, confirmBuffer, 1024)
	if err != nil {
		return nil, translateErr("publish", err)
	}
	return cc, nil
}

// confirmMode puts ch in confirm mode and listens to it: confirms and
// returns are buffered as given, so that the connection's reader does not
// wait for the one who publishes. On an error ch is closed.
func confirmMode(ch *amqp.Channel, confirms, returns int) (*confirmChannel, error) {
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return nil, err
	}
	return &confirmChannel{ch: ch,
		confirms: ch.NotifyPublish(make(chan amqp.Confirmation, confirms)),
		returns:  ch.NotifyReturn(make(chan amqp.Return, returns)),
		closed:   ch.NotifyClose(make(chan *amqp.Error, 1)),
	}, nil
}

// closeErr is why the channel closed, or amqp.ErrClosed when it does not
// say.
func (cc *confirmChannel) closeErr() error {
	select {
	case e := <-cc.closed:
		if e != nil {
			return e
		}
	default:
	}
	return amqp.ErrClosed
}

// putConfirmChannel gives back a channel whose publishes are all settled.
func (b *Broker) putConfirmChannel(cc *confirmChannel) {
	p := &b.pubPool
	p.mu.Lock()
	defer p.mu.Unlock()
	if cc.ch.IsClosed() || len(cc.confirms) > 0 || len(cc.returns) > 0 || len(p.free) >= maxPooledChannels {
		_ = cc.ch.Close()
		return
	}
	p.free = append(p.free, cc)
}

// exchangeKnown reports whether ex was seen to exist within exchangeTTL.
func (b *Broker) exchangeKnown(ex string) bool {
	p := &b.pubPool
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.exchanges[ex]
	return ok && time.Since(t) < exchangeTTL
}

func (b *Broker) exchangeSeen(ex string) {
	p := &b.pubPool
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exchanges == nil {
		p.exchanges = map[string]time.Time{}
	}
	p.exchanges[ex] = time.Now()
}
