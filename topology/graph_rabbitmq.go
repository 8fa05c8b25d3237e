package topology

import "fmt"

// graphRabbitMQ draws the model's RabbitMQ part: exchanges, queues with
// their TTL, delivery limit and delayed retry, bindings, and dead-letter
// edges.
func graphRabbitMQ(g *graph, m *Model) {
	r := m.Rabbit
	if r == nil {
		return
	}
	xid := func(name string) string {
		t := "exchange"
		for _, x := range r.Exchanges {
			if x.Name == name {
				t = x.Type
			}
		}
		label := name
		if name == "" {
			label = "(default exchange)"
		}
		return g.node("x:"+name, label+"\n"+t, "exchange")
	}
	for _, x := range r.Exchanges {
		xid(x.Name)
	}
	for _, q := range r.Queues {
		e := effectiveOf(q, r)
		label := q.Name + "\n" + q.Kind
		if e.ttl != nil {
			label += fmt.Sprintf(", ttl %s", FormatDuration(msDuration(*e.ttl)))
		}
		if e.limit != nil {
			label += fmt.Sprintf(", delivery limit %d", *e.limit)
		}
		if e.retry != "" {
			label += ", delayed retry " + e.retry
		}
		qid := g.node("q:"+q.Name, label, "queue")
		if e.dlx != nil {
			l := "dead-letter"
			if e.dlrk != nil {
				l += ": " + *e.dlrk
			}
			if e.policy != "" && q.Arguments["x-dead-letter-exchange"] == nil {
				l += " (policy)"
			}
			g.edges = append(g.edges, gEdge{from: qid, to: xid(*e.dlx), label: l, dead: true})
		}
	}
	for _, b := range r.Bindings {
		from := xid(b.Source)
		var to string
		if b.DestinationType == "exchange" {
			to = xid(b.Destination)
		} else {
			to = g.node("q:"+b.Destination, b.Destination, "queue")
		}
		g.edges = append(g.edges, gEdge{from: from, to: to, label: b.RoutingKey})
	}
}
