package topology

import "fmt"

// graphSQS draws the model's SQS part: queues, their redrive policies and
// the retries of their ladders.
func graphSQS(g *graph, m *Model) {
	s := m.SQS
	if s == nil {
		return
	}
	for _, q := range s.Queues {
		label := q.Name + "\nsqs"
		if q.FIFO {
			label = q.Name + "\nsqs fifo"
		}
		if d := q.Attributes["DelaySeconds"]; d != "" && d != "0" {
			label += ", delay " + d + "s"
		}
		g.node("s:"+q.Name, label, "queue")
	}
	for _, q := range s.Queues {
		if q.DeadLetter != nil {
			to := g.node("s:"+q.DeadLetter.Queue, q.DeadLetter.Queue+"\nsqs", "queue")
			g.edges = append(g.edges, gEdge{from: g.ids["s:"+q.Name], to: to,
				label: fmt.Sprintf("after %d receives", q.DeadLetter.MaxReceiveCount), dead: true})
		}
	}
	for _, l := range s.Ladders {
		main := g.ids["s:"+l.Main]
		for i, t := range l.Tiers {
			g.edges = append(g.edges, gEdge{from: main, to: g.ids["s:"+t], label: fmt.Sprintf("retry %d (consumer)", i+1)})
		}
	}
}
