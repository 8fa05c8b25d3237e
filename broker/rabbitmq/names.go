package rabbitmq

import (
	"context"
	"sort"
	"strings"

	"github.com/dlq-tools/dlq/broker"
)

var (
	_ broker.Namer         = (*Broker)(nil)
	_ broker.ExchangeNamer = (*Broker)(nil)
)

type mgmtName struct {
	Name string `json:"name"`
}

// QueueNames lists the vhost's queue names with one management API call.
func (b *Broker) QueueNames(ctx context.Context, prefix string) ([]string, error) {
	return b.names(ctx, "/queues/", prefix)
}

// ExchangeNames lists the vhost's exchange names (amq.* included, the
// nameless default exchange left out) with one management API call.
func (b *Broker) ExchangeNames(ctx context.Context, prefix string) ([]string, error) {
	return b.names(ctx, "/exchanges/", prefix)
}

func (b *Broker) names(ctx context.Context, kind, prefix string) ([]string, error) {
	var objs []mgmtName
	if err := b.mgmtDo(ctx, "GET", kind+b.vhostPath()+"?columns=name", nil, &objs); err != nil {
		return nil, b.listErr(err)
	}
	var out []string
	for _, o := range objs {
		if o.Name != "" && strings.HasPrefix(o.Name, prefix) {
			out = append(out, o.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}
