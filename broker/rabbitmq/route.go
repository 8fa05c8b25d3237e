package rabbitmq

import (
	"sort"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/internal/rabbitrules"
)

// mgmtBinding is one binding of the vhost; Source "" is the default
// exchange.
type mgmtBinding struct {
	Source          string `json:"source"`
	Destination     string `json:"destination"`
	DestinationType string `json:"destination_type"` // queue or exchange
	RoutingKey      string `json:"routing_key"`
}

type mgmtExchange struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// resolveDeadLetters fills DeadLetterQueues of every queue that has a
// dead-letter exchange, and DeadLetterSources of the queues that receive
// its dead letters, by following the vhost's bindings from the
// dead-letter exchange (through exchange-to-exchange bindings too).
//
// What a dead letter is routed with: the queue's dead-letter routing key when
// one is set; otherwise the message keeps its own routing keys, which dlq
// cannot know for every message, so it approximates them by the keys of the
// bindings that lead into the source queue (for a queue fed through the
// default exchange, its own name).
//
// How exchanges route: direct compares keys exactly, topic matches binding
// patterns (* one word, # zero or more), fanout reaches every bound queue.
// Headers exchanges and plugin types (x-delayed-message, consistent hash…)
// are approximated as reaching every bound queue, since their routing depends
// on message headers or state. The default exchange ("") routes to the queue
// named by the key; RabbitMQ drops a dead letter that would return to the
// queue it died in (a cycle) unless it was rejected, so the source itself is
// never listed as its own dead-letter queue. Then every queue gets its role
// (broker.AssignRoles): retry queues of TTL ladders, dead-letter queues by
// relation or by name, work queues.
func resolveDeadLetters(qs []broker.Queue, dls []deadLetter, bindings []mgmtBinding, exchanges []mgmtExchange) {
	types := make(map[string]string, len(exchanges))
	for _, e := range exchanges {
		types[e.Name] = e.Type
	}
	bySource := make(map[string][]mgmtBinding)
	into := make(map[string][]string) // queue → keys of bindings into it
	for _, bd := range bindings {
		bySource[bd.Source] = append(bySource[bd.Source], bd)
		if bd.DestinationType == "queue" {
			into[bd.Destination] = append(into[bd.Destination], bd.RoutingKey)
		}
	}
	index := make(map[string]int, len(qs))
	for i := range qs {
		index[qs[i].Name] = i
	}
	sources := make(map[string]map[string]bool)
	for i := range qs {
		q, dl := &qs[i], dls[i]
		if !dl.DeadLetterSet {
			continue
		}
		keys := []string{dl.DeadLetterRoutingKey}
		if !dl.HasRoutingKey {
			keys = into[q.Name]
			if len(keys) == 0 {
				keys = []string{q.Name}
			}
		}
		targets := map[string]bool{}
		route(dl.DeadLetterExchange, keys, types, bySource, targets, map[string]bool{})
		delete(targets, q.Name)
		for t := range targets {
			if _, ok := index[t]; !ok {
				continue
			}
			q.DeadLetterQueues = append(q.DeadLetterQueues, t)
			if sources[t] == nil {
				sources[t] = map[string]bool{}
			}
			sources[t][q.Name] = true
		}
		sort.Strings(q.DeadLetterQueues)
	}
	for i := range qs {
		q := &qs[i]
		for s := range sources[q.Name] {
			q.DeadLetterSources = append(q.DeadLetterSources, s)
		}
		sort.Strings(q.DeadLetterSources)
	}
	broker.AssignRoles(qs, nil)
}

// route adds to out every queue that exchange ex routes any of keys to.
func route(ex string, keys []string, types map[string]string, bySource map[string][]mgmtBinding, out, seen map[string]bool) {
	if seen[ex] {
		return
	}
	seen[ex] = true
	if ex == "" {
		for _, k := range keys {
			out[k] = true
		}
		return
	}
	typ := types[ex]
	for _, bd := range bySource[ex] {
		if !routes(typ, bd.RoutingKey, keys) {
			continue
		}
		if bd.DestinationType == "exchange" {
			route(bd.Destination, keys, types, bySource, out, seen)
		} else {
			out[bd.Destination] = true
		}
	}
}

// routes reports whether a binding of an exchange of type typ takes any of
// keys (rabbitrules.Routes).
func routes(typ, bindingKey string, keys []string) bool {
	for _, k := range keys {
		if rabbitrules.Routes(typ, bindingKey, k) {
			return true
		}
	}
	return false
}
