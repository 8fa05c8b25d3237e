package topology

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/dlq-tools/dlq/broker"
)

// serverNamed reports queues a server or client library named (amq.gen-…),
// which a spec cannot declare.
func serverNamed(name string) bool { return strings.HasPrefix(name, "amq.") }

// ExportRabbit converts a vhost's topology into a spec.
func ExportRabbit(t broker.RabbitTopology, opts ExportOptions) *Spec {
	keep := func(name string) bool { return strings.HasPrefix(name, opts.Prefix) }
	r := &RabbitSpec{Vhost: t.Vhost}
	for _, x := range t.Exchanges {
		if x.Name == "" || strings.HasPrefix(x.Name, "amq.") || !keep(x.Name) {
			continue
		}
		r.Exchanges = append(r.Exchanges, ExchangeSpec{Name: x.Name, Type: x.Type, Durable: boolp(x.Durable),
			AutoDelete: x.AutoDelete, Internal: x.Internal, Arguments: exportTable(x.Arguments)})
	}
	kept := map[string]bool{}
	for _, q := range t.Queues {
		if serverNamed(q.Name) || q.Exclusive || !keep(q.Name) {
			continue
		}
		kept[q.Name] = true
		typ := q.Type
		args := exportTable(q.Arguments)
		if at, ok := args["x-queue-type"].(string); ok && at != "classic" {
			typ = at
			delete(args, "x-queue-type")
			if len(args) == 0 {
				args = nil
			}
		}
		if typ == "" {
			typ = "classic"
		}
		r.Queues = append(r.Queues, QueueSpec{Name: q.Name, Type: typ, Durable: boolp(q.Durable), AutoDelete: q.AutoDelete, Arguments: args})
	}
	for _, b := range t.Bindings {
		if b.Source == "" || !keep(b.Source) && !keep(b.Destination) {
			continue
		}
		if b.DestinationType == "queue" && (serverNamed(b.Destination) || !kept[b.Destination]) {
			continue
		}
		bs := BindingSpec{Exchange: b.Source, RoutingKey: b.RoutingKey, Arguments: exportTable(b.Arguments)}
		if b.DestinationType == "exchange" {
			bs.ToExchange = b.Destination
		} else {
			bs.Queue = b.Destination
		}
		r.Bindings = append(r.Bindings, bs)
	}
	for _, p := range t.Policies {
		in := keep(p.Name)
		if !in {
			if re, err := regexp.Compile(p.Pattern); err == nil {
				for q := range kept {
					if re.MatchString(q) {
						in = true
						break
					}
				}
			}
		}
		if !in {
			continue
		}
		r.Policies = append(r.Policies, PolicySpec{Name: p.Name, Pattern: p.Pattern, ApplyTo: p.ApplyTo, Priority: p.Priority,
			Definition: exportTable(p.Definition)})
	}
	sort.Slice(r.Exchanges, func(i, j int) bool { return r.Exchanges[i].Name < r.Exchanges[j].Name })
	sort.Slice(r.Queues, func(i, j int) bool { return r.Queues[i].Name < r.Queues[j].Name })
	sort.Slice(r.Policies, func(i, j int) bool { return r.Policies[i].Name < r.Policies[j].Name })
	return &Spec{Version: SpecVersion, RabbitMQ: r}
}

func exportTable(t map[string]any) map[string]any {
	if len(t) == 0 {
		return nil
	}
	return normalizeTable(t)
}

// exportRabbitMQ reads b's topology through the management API.
func exportRabbitMQ(ctx context.Context, b broker.Broker, opts ExportOptions) (*Spec, error) {
	r, ok := b.(broker.RabbitTopologyReader)
	if !ok {
		return nil, broker.Errorf(broker.ErrUnsupported, "export", "this RabbitMQ connection cannot read topology: it needs the management API (%s)", broker.OptManagementURL)
	}
	t, err := r.ReadRabbitTopology(ctx)
	if err != nil {
		return nil, fmt.Errorf("read topology: %w", err)
	}
	return ExportRabbit(t, opts), nil
}
