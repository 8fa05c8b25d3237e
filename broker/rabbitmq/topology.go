package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
)

var (
	_ broker.RabbitTopologyReader  = (*Broker)(nil)
	_ broker.RabbitTopologyApplier = (*Broker)(nil)
)

type topoExchange struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Durable    bool           `json:"durable"`
	AutoDelete bool           `json:"auto_delete"`
	Internal   bool           `json:"internal"`
	Arguments  map[string]any `json:"arguments"`
}

type topoQueue struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Durable    bool           `json:"durable"`
	AutoDelete bool           `json:"auto_delete"`
	Exclusive  bool           `json:"exclusive"`
	Arguments  map[string]any `json:"arguments"`
	Policy     any            `json:"policy"`
	Messages   *int64         `json:"messages"`
}

type topoBinding struct {
	Source          string         `json:"source"`
	Destination     string         `json:"destination"`
	DestinationType string         `json:"destination_type"`
	RoutingKey      string         `json:"routing_key"`
	Arguments       map[string]any `json:"arguments"`
}

type topoPolicy struct {
	Name       string         `json:"name"`
	Pattern    string         `json:"pattern"`
	ApplyTo    string         `json:"apply-to"`
	Priority   int            `json:"priority"`
	Definition map[string]any `json:"definition"`
}

// ReadRabbitTopology reads the vhost's exchanges, queues, bindings and
// policies from the management API: four calls, whatever the vhost's size.
// The default exchange, amq.* exchanges and default-exchange bindings are
// left out; server-named and exclusive queues are kept (marked Exclusive)
// so that a plan can tell a name is taken.
func (b *Broker) ReadRabbitTopology(ctx context.Context) (broker.RabbitTopology, error) {
	v := b.vhostPath()
	t := broker.RabbitTopology{Vhost: b.vhost}
	var (
		exs  []topoExchange
		qs   []topoQueue
		bs   []topoBinding
		pols []topoPolicy
	)
	err := parallel(
		func() error {
			return b.mgmtDo(ctx, "GET", "/exchanges/"+v+"?columns=name,type,durable,auto_delete,internal,arguments", nil, &exs)
		},
		func() error {
			return b.mgmtDo(ctx, "GET", "/queues/"+v+"?columns=name,type,durable,auto_delete,exclusive,arguments,policy,messages", nil, &qs)
		},
		func() error { return b.mgmtDo(ctx, "GET", "/bindings/"+v, nil, &bs) },
		func() error { return b.mgmtDo(ctx, "GET", "/policies/"+v, nil, &pols) },
	)
	if err != nil {
		if errors.Is(err, broker.ErrNotFound) {
			return t, broker.Errorf(broker.ErrNotFound, "read topology", "vhost `%s` not found: check the vhost in %s", b.vhost, broker.OptBroker)
		}
		return t, fmt.Errorf("read topology of vhost `%s`: %w", b.vhost, err)
	}
	for _, x := range exs {
		if x.Name == "" || strings.HasPrefix(x.Name, "amq.") {
			continue
		}
		t.Exchanges = append(t.Exchanges, broker.Exchange{Name: x.Name, Type: x.Type, Durable: x.Durable,
			AutoDelete: x.AutoDelete, Internal: x.Internal, Arguments: normalizeJSON(x.Arguments)})
	}
	for _, q := range qs {
		d := broker.QueueDecl{Name: q.Name, Type: q.Type, Durable: q.Durable, AutoDelete: q.AutoDelete,
			Exclusive: q.Exclusive, Arguments: normalizeJSON(q.Arguments)}
		if s, ok := q.Policy.(string); ok {
			d.Policy = s
		}
		if q.Messages != nil {
			d.Messages = *q.Messages
		}
		t.Queues = append(t.Queues, d)
	}
	for _, bd := range bs {
		if bd.Source == "" {
			continue
		}
		t.Bindings = append(t.Bindings, broker.Binding{Source: bd.Source, Destination: bd.Destination,
			DestinationType: bd.DestinationType, RoutingKey: bd.RoutingKey, Arguments: normalizeJSON(bd.Arguments)})
	}
	for _, p := range pols {
		t.Policies = append(t.Policies, broker.Policy{Name: p.Name, Pattern: p.Pattern, ApplyTo: p.ApplyTo,
			Priority: p.Priority, Definition: normalizeJSON(p.Definition)})
	}
	sort.Slice(t.Exchanges, func(i, j int) bool { return t.Exchanges[i].Name < t.Exchanges[j].Name })
	sort.Slice(t.Queues, func(i, j int) bool { return t.Queues[i].Name < t.Queues[j].Name })
	sort.Slice(t.Policies, func(i, j int) bool { return t.Policies[i].Name < t.Policies[j].Name })
	return t, nil
}

// ApplyRabbitChange declares or deletes one object. Exchanges, queues and
// bindings go over AMQP on a fresh channel each (a 406 closes only that
// channel); policies go through the management API. A queue is deleted only
// when empty: a queue holding messages is ErrConflict and stays.
func (b *Broker) ApplyRabbitChange(ctx context.Context, c broker.RabbitChange) error {
	del := c.Action == broker.Delete
	switch {
	case c.Exchange != nil:
		x := c.Exchange
		if del {
			return broker.Naming(x.Name, b.topoAMQP(ctx, "delete exchange `"+x.Name+"`", func(ch *amqp.Channel) error {
				return ch.ExchangeDelete(x.Name, false, false)
			}))
		}
		args, err := toTable(x.Arguments)
		if err != nil {
			return broker.Naming(x.Name, fmt.Errorf("declare exchange `%s`: %w", x.Name, err))
		}
		return broker.Naming(x.Name, b.topoAMQP(ctx, "declare exchange `"+x.Name+"`", func(ch *amqp.Channel) error {
			return ch.ExchangeDeclare(x.Name, x.Type, x.Durable, x.AutoDelete, x.Internal, false, args)
		}))
	case c.Queue != nil:
		q := c.Queue
		if del {
			return b.deleteEmptyQueue(ctx, q)
		}
		args, err := toTable(q.Arguments)
		if err != nil {
			return broker.Naming(q.Name, fmt.Errorf("declare queue `%s`: %w", q.Name, err))
		}
		return broker.Naming(q.Name, b.topoAMQP(ctx, "declare queue `"+q.Name+"`", func(ch *amqp.Channel) error {
			_, err := ch.QueueDeclare(q.Name, q.Durable, q.AutoDelete, false, false, args)
			return err
		}))
	case c.Binding != nil:
		bd := c.Binding
		args, err := toTable(bd.Arguments)
		if err != nil {
			return fmt.Errorf("binding from `%s`: %w", bd.Source, err)
		}
		op := fmt.Sprintf("bind `%s` to `%s` with %q", bd.Destination, bd.Source, bd.RoutingKey)
		if del {
			op = "un" + op
		}
		return b.topoAMQP(ctx, op, func(ch *amqp.Channel) error {
			switch {
			case bd.DestinationType == "exchange" && del:
				return ch.ExchangeUnbind(bd.Destination, bd.RoutingKey, bd.Source, false, args)
			case bd.DestinationType == "exchange":
				return ch.ExchangeBind(bd.Destination, bd.RoutingKey, bd.Source, false, args)
			case del:
				return ch.QueueUnbind(bd.Destination, bd.RoutingKey, bd.Source, args)
			default:
				return ch.QueueBind(bd.Destination, bd.RoutingKey, bd.Source, false, args)
			}
		})
	case c.Policy != nil:
		p := c.Policy
		path := "/policies/" + b.vhostPath() + "/" + url.PathEscape(p.Name)
		if del {
			err := b.mgmtDo(ctx, "DELETE", path, nil, nil)
			if errors.Is(err, broker.ErrNotFound) {
				return nil
			}
			return err
		}
		body := map[string]any{"pattern": p.Pattern, "apply-to": p.ApplyTo, "priority": p.Priority, "definition": p.Definition}
		if err := b.mgmtDo(ctx, "PUT", path, body, nil); err != nil {
			return broker.Naming(p.Name, fmt.Errorf("put policy `%s`: %w", p.Name, err))
		}
		return nil
	}
	return fmt.Errorf("empty topology change")
}

// deleteEmptyQueue deletes a queue only when it holds no message. Classic
// queues use queue.delete with if-empty; quorum queues refuse that flag, so
// for them dlq first checks that the queue has no ready message (a passive
// declare) and none unacknowledged (the management API), then deletes.
func (b *Broker) deleteEmptyQueue(ctx context.Context, q *broker.QueueDecl) error {
	op := "delete queue `" + q.Name + "`"
	notEmpty := func(n int64) error {
		return broker.Naming(q.Name, broker.Errorf(broker.ErrConflict, op, "the queue holds %d message(s): move or drain them first (%s, %s)", n, broker.Cmd("redrive"), broker.Cmd("purge")))
	}
	quorum := q.Type == "quorum" || q.Type == "stream" || q.Arguments["x-queue-type"] == "quorum" || q.Arguments["x-queue-type"] == "stream"
	if !quorum {
		err := b.topoAMQP(ctx, op, func(ch *amqp.Channel) error {
			_, err := ch.QueueDelete(q.Name, false, true, false)
			return err
		})
		if errors.Is(err, broker.ErrConflict) {
			return notEmpty(1)
		}
		return broker.Naming(q.Name, err)
	}
	var ready int
	err := b.topoAMQP(ctx, op, func(ch *amqp.Channel) error {
		st, err := ch.QueueDeclarePassive(q.Name, true, false, false, false, nil)
		ready = st.Messages
		return err
	})
	if errors.Is(err, broker.ErrNotFound) {
		return nil
	}
	if err != nil {
		return broker.Naming(q.Name, err)
	}
	if ready > 0 {
		return notEmpty(int64(ready))
	}
	var st struct {
		Messages *int64 `json:"messages"`
	}
	if err := b.mgmtDo(ctx, "GET", "/queues/"+b.vhostPath()+"/"+url.PathEscape(q.Name), nil, &st); err != nil {
		if errors.Is(err, broker.ErrNotFound) {
			return nil
		}
		return err
	}
	if st.Messages != nil && *st.Messages > 0 {
		return notEmpty(*st.Messages)
	}
	return b.topoAMQP(ctx, op, func(ch *amqp.Channel) error {
		_, err := ch.QueueDelete(q.Name, false, false, false)
		return err
	})
}

func (b *Broker) topoAMQP(ctx context.Context, op string, fn func(ch *amqp.Channel) error) error {
	err := b.withChannel(ctx, fn)
	if err == nil {
		return nil
	}
	var be *broker.Error
	if errors.As(err, &be) && be.Op == "" {
		c := *be
		c.Op = op
		return &c
	}
	return fmt.Errorf("%s: %w", op, err)
}
