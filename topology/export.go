package topology

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/dlq-tools/dlq/broker"
)

// ExportOptions narrow an export.
type ExportOptions struct {
	// Prefix keeps only objects whose names start with it (policies: also
	// those whose pattern matches a kept queue).
	Prefix string
}

// Export reads what the broker has and writes it as a spec in the low-level
// form (exchanges, queues, bindings, policies; SQS queues with their
// attributes). Planning the result against the same broker shows no
// changes.
func Export(ctx context.Context, b broker.Broker, opts ExportOptions) (*Spec, error) {
	switch b.System() {
	case broker.RabbitMQ:
		r, ok := b.(broker.RabbitTopologyReader)
		if !ok {
			return nil, broker.Errorf(broker.ErrUnsupported, "export", "this RabbitMQ connection cannot read topology: it needs the management API (%s)", broker.OptManagementURL)
		}
		t, err := r.ReadRabbitTopology(ctx)
		if err != nil {
			return nil, fmt.Errorf("read topology: %w", err)
		}
		return ExportRabbit(t, opts), nil
	case broker.SQS:
		r, ok := b.(broker.SQSTopologyReader)
		if !ok {
			return nil, broker.Errorf(broker.ErrUnsupported, "export", "this SQS connection cannot read queue attributes")
		}
		qs, err := r.ListSQSQueues(ctx, opts.Prefix)
		if err != nil {
			return nil, fmt.Errorf("list queues: %w", err)
		}
		return ExportSQS(qs), nil
	}
	return nil, broker.Errorf(broker.ErrUnsupported, "export", "topology needs a RabbitMQ or SQS %s, not %s", broker.OptBroker, b.System())
}

func boolp(b bool) *bool { return &b }

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

// Attributes that GetQueueAttributes reports but nobody sets.
var readOnlySQS = map[string]bool{
	"ApproximateNumberOfMessages": true, "ApproximateNumberOfMessagesNotVisible": true,
	"ApproximateNumberOfMessagesDelayed": true, "CreatedTimestamp": true, "LastModifiedTimestamp": true,
	"QueueArn": true, "FifoQueue": true,
}

// ExportSQS converts SQS queues into a spec.
func ExportSQS(qs []broker.SQSQueueState) *Spec {
	byARN := map[string]string{}
	for _, q := range qs {
		byARN[q.ARN] = q.Name
	}
	nameOf := func(arn string) string {
		if n, ok := byARN[arn]; ok {
			return n
		}
		if i := strings.LastIndexByte(arn, ':'); i >= 0 {
			return arn[i+1:]
		}
		return arn
	}
	s := &SQSSpec{}
	for _, q := range qs {
		qs := SQSQueueSpec{Name: q.Name}
		attrs := map[string]string{}
		for k, v := range q.Attributes {
			if !readOnlySQS[k] {
				attrs[k] = v
			}
		}
		secs := func(attr string) *Duration {
			v, ok := attrs[attr]
			if !ok {
				return nil
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil
			}
			delete(attrs, attr)
			d := Duration(time.Duration(n) * time.Second)
			return &d
		}
		qs.VisibilityTimeout = secs("VisibilityTimeout")
		qs.Retention = secs("MessageRetentionPeriod")
		qs.ReceiveWait = secs("ReceiveMessageWaitTimeSeconds")
		qs.Delay = secs("DelaySeconds")
		if v, ok := attrs["MaximumMessageSize"]; ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				qs.MaxMessageSize = &n
				delete(attrs, "MaximumMessageSize")
			}
		}
		if v, ok := attrs["ContentBasedDeduplication"]; ok && strings.HasSuffix(q.Name, ".fifo") {
			b := strings.EqualFold(v, "true")
			qs.ContentBasedDeduplication = &b
			delete(attrs, "ContentBasedDeduplication")
		} else if ok && strings.EqualFold(v, "false") {
			delete(attrs, "ContentBasedDeduplication")
		}
		if v, ok := attrs["RedrivePolicy"]; ok {
			var rp struct {
				Target string `json:"deadLetterTargetArn"`
				Max    any    `json:"maxReceiveCount"`
			}
			if json.Unmarshal([]byte(v), &rp) == nil && rp.Target != "" {
				n, _ := strconv.Atoi(fmt.Sprint(rp.Max))
				qs.DeadLetter = &SQSDeadLetter{Queue: nameOf(rp.Target), MaxReceiveCount: n}
			}
			delete(attrs, "RedrivePolicy")
		}
		if v, ok := attrs["RedriveAllowPolicy"]; ok {
			var ra struct {
				Permission string   `json:"redrivePermission"`
				Sources    []string `json:"sourceQueueArns"`
			}
			if json.Unmarshal([]byte(v), &ra) == nil && ra.Permission != "" {
				r := &SQSRedriveAllow{Permission: ra.Permission}
				for _, a := range ra.Sources {
					r.Sources = append(r.Sources, nameOf(a))
				}
				qs.RedriveAllow = r
			}
			delete(attrs, "RedriveAllowPolicy")
		}
		if len(attrs) > 0 {
			qs.Attributes = attrs
		}
		s.Queues = append(s.Queues, qs)
	}
	sort.Slice(s.Queues, func(i, j int) bool { return s.Queues[i].Name < s.Queues[j].Name })
	return &Spec{Version: SpecVersion, SQS: s}
}

// MarshalSpec writes a spec as YAML with a header comment.
func MarshalSpec(s *Spec, header string) ([]byte, error) {
	var buf bytes.Buffer
	for _, l := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		if l != "" {
			buf.WriteString("# " + l + "\n")
		}
	}
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
