package topology

import "gopkg.in/yaml.v3"

// positionsRabbitMQ records where the objects of the spec's `rabbitmq:`
// section r are.
func positionsRabbitMQ(s *Spec, r *yaml.Node, at func(*yaml.Node) Pos) {
	if s.RabbitMQ == nil {
		return
	}
	s.RabbitMQ.Pos = at(r)
	for i, n := range items(r, "retry_ladders") {
		if i < len(s.RabbitMQ.RetryLadders) {
			l := &s.RabbitMQ.RetryLadders[i]
			l.Pos = at(n)
			for j, t := range items(n, "tiers") {
				if j < len(l.Tiers) {
					l.Tiers[j].Pos = at(t)
				}
			}
		}
	}
	for i, n := range items(r, "work_queues") {
		if i < len(s.RabbitMQ.WorkQueues) {
			s.RabbitMQ.WorkQueues[i].Pos = at(n)
		}
	}
	for i, n := range items(r, "exchanges") {
		if i < len(s.RabbitMQ.Exchanges) {
			s.RabbitMQ.Exchanges[i].Pos = at(n)
		}
	}
	for i, n := range items(r, "queues") {
		if i < len(s.RabbitMQ.Queues) {
			q := &s.RabbitMQ.Queues[i]
			q.Pos = at(n)
			for j, b := range items(n, "bind") {
				if j < len(q.Bind) {
					q.Bind[j].Pos = at(b)
				}
			}
		}
	}
	for i, n := range items(r, "bindings") {
		if i < len(s.RabbitMQ.Bindings) {
			s.RabbitMQ.Bindings[i].Pos = at(n)
		}
	}
	for i, n := range items(r, "policies") {
		if i < len(s.RabbitMQ.Policies) {
			s.RabbitMQ.Policies[i].Pos = at(n)
		}
	}
}
