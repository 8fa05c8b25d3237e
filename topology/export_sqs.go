package topology

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/broker"
)

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

// Attributes that GetQueueAttributes reports but nobody sets.
var readOnlySQS = map[string]bool{
	"ApproximateNumberOfMessages": true, "ApproximateNumberOfMessagesNotVisible": true,
	"ApproximateNumberOfMessagesDelayed": true, "CreatedTimestamp": true, "LastModifiedTimestamp": true,
	"QueueArn": true, "FifoQueue": true,
}

// exportSQS reads the attributes of b's queues whose names start with
// opts.Prefix.
func exportSQS(ctx context.Context, b broker.Broker, opts ExportOptions) (*Spec, error) {
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
