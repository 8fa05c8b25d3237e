package sqs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlq-tools/dlq/broker"
)

var (
	_ broker.QueueLister    = (*Broker)(nil)
	_ broker.QueueInspector = (*Broker)(nil)
)

// Queue attribute names read here.
const (
	attrQueueArn           = "QueueArn"
	attrFifo               = "FifoQueue"
	attrContentDedup       = "ContentBasedDeduplication"
	attrDepth              = "ApproximateNumberOfMessages"
	attrNotVisible         = "ApproximateNumberOfMessagesNotVisible"
	attrDelayed            = "ApproximateNumberOfMessagesDelayed"
	attrRedrivePolicy      = "RedrivePolicy"
	attrRedriveAllowPolicy = "RedriveAllowPolicy"
	attrVisibilityTimeout  = "VisibilityTimeout"
	attrDelaySeconds       = "DelaySeconds"
)

// attributeConcurrency bounds the GetQueueAttributes calls in flight while
// listing queues.
const attributeConcurrency = 8

// parseRedrivePolicy returns the target ARN and maxReceiveCount; ok is false
// when there is no (valid) policy.
func parseRedrivePolicy(s string) (target string, maxReceives int64, ok bool) {
	if strings.TrimSpace(s) == "" {
		return "", 0, false
	}
	var p struct {
		DeadLetterTargetArn string          `json:"deadLetterTargetArn"`
		MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(s), &p); err != nil || p.DeadLetterTargetArn == "" {
		return "", 0, false
	}
	raw := strings.Trim(string(p.MaxReceiveCount), `"`)
	n, _ := strconv.ParseInt(raw, 10, 64)
	return p.DeadLetterTargetArn, n, true
}

// redriveAllowPolicy is a queue's RedriveAllowPolicy attribute: which
// queues may use it as their dead-letter queue.
type redriveAllowPolicy struct {
	RedrivePermission string   `json:"redrivePermission"` // allowAll, denyAll, byQueue
	SourceQueueArns   []string `json:"sourceQueueArns"`
}

func parseRedriveAllowPolicy(s string) (redriveAllowPolicy, bool) {
	var p redriveAllowPolicy
	if strings.TrimSpace(s) == "" || json.Unmarshal([]byte(s), &p) != nil {
		return p, false
	}
	return p, true
}

// Queues lists every queue of the account and region with its depth and its
// dead-letter relations.
func (b *Broker) Queues(ctx context.Context) ([]broker.Queue, error) {
	return b.QueuesWithPrefix(ctx, "")
}

// QueuesWithPrefix lists the queues whose names start with prefix ("" for
// all). Dead-letter sources are found among the listed queues only.
func (b *Broker) QueuesWithPrefix(ctx context.Context, prefix string) ([]broker.Queue, error) {
	urls, err := b.listQueueURLs(ctx, prefix)
	if err != nil {
		return nil, err
	}
	attrs, err := b.attributesOf(ctx, urls)
	if err != nil {
		return nil, err
	}
	queues := make([]broker.Queue, 0, len(urls))
	for _, u := range urls {
		a, ok := attrs[u]
		if !ok {
			continue // deleted while listing
		}
		queues = append(queues, queueFrom(u, a))
	}
	linkDeadLetters(queues)
	sort.Slice(queues, func(i, j int) bool { return queues[i].Name < queues[j].Name })
	return queues, nil
}

// Queue describes one queue by name, URL or ARN. Its dead-letter sources come
// from ListDeadLetterSourceQueues, or from the redrive policies of all queues
// where the endpoint lacks that call.
func (b *Broker) Queue(ctx context.Context, ref string) (broker.Queue, error) {
	u, err := b.queueURL(ctx, ref)
	if err != nil {
		return broker.Queue{}, err
	}
	a, err := b.attributes(ctx, u)
	if err != nil {
		return broker.Queue{}, err
	}
	q := queueFrom(u, a)
	sources, err := b.deadLetterSources(ctx, u)
	if err != nil {
		return broker.Queue{}, err
	}
	for _, s := range sources {
		q.DeadLetterSources = append(q.DeadLetterSources, nameFromURL(s))
	}
	sort.Strings(q.DeadLetterSources)
	one := []broker.Queue{q}
	broker.AssignRoles(one, []broker.DLQHint{dlqHint(a[attrRedriveAllowPolicy])})
	return one[0], nil
}

// listQueueURLs pages through ListQueues.
func (b *Broker) listQueueURLs(ctx context.Context, prefix string) ([]string, error) {
	var urls []string
	in := &sqs.ListQueuesInput{MaxResults: aws.Int32(1000)}
	if prefix != "" {
		in.QueueNamePrefix = aws.String(prefix)
	}
	for {
		out, err := b.api.ListQueues(ctx, in)
		if err != nil {
			return nil, translateErr("list queues", err)
		}
		urls = append(urls, out.QueueUrls...)
		if aws.ToString(out.NextToken) == "" || len(out.QueueUrls) == 0 {
			return urls, nil
		}
		in.NextToken = out.NextToken
	}
}

// attributesOf reads the attributes of every queue, a few at a time: the
// names given, or all of them. A queue deleted meanwhile is left out; any
// other failure fails the whole call.
func (b *Broker) attributesOf(ctx context.Context, urls []string, names ...types.QueueAttributeName) (map[string]map[string]string, error) {
	out, err := gather(ctx, urls, attributeConcurrency, func(ctx context.Context, u string) (map[string]string, error) {
		if len(names) == 0 {
			return b.attributes(ctx, u)
		}
		out, err := b.api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(u), AttributeNames: names})
		if err != nil {
			return nil, b.queueErr("read queue `"+nameFromURL(u)+"`", u, err)
		}
		return out.Attributes, nil
	})
	if err != nil && err == ctx.Err() {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	return out, err
}

// gather calls get for each of items, limit at a time, and returns the
// results by item. An item that is not found (a queue deleted meanwhile) is
// left out; the first other failure cancels the calls still running and is
// returned, and so is ctx's error when ctx ends first.
func gather[T comparable, R any](ctx context.Context, items []T, limit int, get func(context.Context, T) (R, error)) (map[T]R, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		out   = make(map[T]R, len(items))
		first error
		wg    sync.WaitGroup
		sem   = make(chan struct{}, limit)
	)
	for _, it := range items {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r, err := get(ctx, it)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, broker.ErrNotFound):
			case err != nil:
				if first == nil {
					first = err
					cancel()
				}
			default:
				out[it] = r
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// queueFrom builds the snapshot of one queue from its attributes.
func queueFrom(url string, a map[string]string) broker.Queue {
	q := broker.Queue{
		System: broker.SQS,
		Name:   nameFromURL(url),
		URL:    url,
		ARN:    a[attrQueueArn],
		Kind:   broker.KindSQSStandard,
	}
	if a[attrFifo] == "true" || strings.HasSuffix(q.Name, ".fifo") {
		q.Kind = broker.KindSQSFIFO
	}
	num := func(k string) *int64 {
		n, err := strconv.ParseInt(a[k], 10, 64)
		if err != nil {
			return nil
		}
		return &n
	}
	if n := num(attrDepth); n != nil {
		q.Depth = *n
	}
	if n := num(attrDelaySeconds); n != nil {
		q.DeliveryDelay = time.Duration(*n) * time.Second
	}
	q.InFlight = num(attrNotVisible)
	q.Delayed = num(attrDelayed)
	if target, maxReceives, ok := parseRedrivePolicy(a[attrRedrivePolicy]); ok {
		q.DeadLetterTarget = nameFromARN(target)
		q.DeadLetterQueues = []string{nameFromARN(target)}
		q.DeliveryLimit = maxReceives
	}
	q.Durable = true
	q.Arguments = make(map[string]any, len(a))
	for k, v := range a {
		q.Arguments[k] = v
	}
	return q
}

// linkDeadLetters fills DeadLetterSources by inverting the redrive
// policies of the queues given, then the roles (broker.AssignRoles).
func linkDeadLetters(queues []broker.Queue) {
	byARN := make(map[string]int, len(queues))
	for i, q := range queues {
		if q.ARN != "" {
			byARN[q.ARN] = i
		}
	}
	for _, q := range queues {
		target, _, ok := parseRedrivePolicy(argString(q.Arguments, attrRedrivePolicy))
		if !ok {
			continue
		}
		if i, ok := byARN[target]; ok {
			queues[i].DeadLetterSources = append(queues[i].DeadLetterSources, q.Name)
		}
	}
	hints := make([]broker.DLQHint, len(queues))
	for i := range queues {
		sort.Strings(queues[i].DeadLetterSources)
		hints[i] = dlqHint(argString(queues[i].Arguments, attrRedriveAllowPolicy))
	}
	broker.AssignRoles(queues, hints)
}

func argString(args map[string]any, k string) string {
	s, _ := args[k].(string)
	return s
}

// dlqHint reads a RedriveAllowPolicy: one that names source queues makes
// the queue a DLQ even when none of them is listed; denyAll forbids it.
func dlqHint(allow string) broker.DLQHint {
	p, ok := parseRedriveAllowPolicy(allow)
	switch {
	case ok && p.RedrivePermission == "byQueue" && len(p.SourceQueueArns) > 0:
		return broker.HintDLQ
	case ok && p.RedrivePermission == "denyAll":
		return broker.HintNotDLQ
	}
	return broker.HintNone
}
