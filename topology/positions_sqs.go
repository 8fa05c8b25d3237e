package topology

import "gopkg.in/yaml.v3"

// positionsSQS records where the objects of the spec's `sqs:` section q
// are.
func positionsSQS(s *Spec, q *yaml.Node, at func(*yaml.Node) Pos) {
	if s.SQS == nil {
		return
	}
	for i, n := range items(q, "pairs") {
		if i < len(s.SQS.Pairs) {
			s.SQS.Pairs[i].Pos = at(n)
		}
	}
	for i, n := range items(q, "retry_ladders") {
		if i < len(s.SQS.RetryLadders) {
			s.SQS.RetryLadders[i].Pos = at(n)
		}
	}
	for i, n := range items(q, "queues") {
		if i < len(s.SQS.Queues) {
			s.SQS.Queues[i].Pos = at(n)
		}
	}
}
