package sqs

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dlq-tools/dlq/broker"
)

// queueURL resolves ref — a queue name ("orders-dlq"), URL
// ("https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq") or ARN
// ("arn:aws:sqs:eu-west-1:123456789012:orders-dlq") — to the queue URL that
// every SQS call takes. A URL is returned as given; names and ARNs are looked
// up with GetQueueUrl and cached for the life of the Broker. A missing queue
// is broker.ErrNotFound naming the queue and the fix.
func (b *Broker) queueURL(ctx context.Context, ref string) (string, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return "", broker.Errorf(broker.ErrNotFound, "find queue", "no queue given: pass a queue name, URL or ARN")
	}
	if isURL(ref) {
		return ref, nil
	}
	b.mu.Lock()
	u, ok := b.urls[ref]
	b.mu.Unlock()
	if ok {
		return u, nil
	}
	in := &sqs.GetQueueUrlInput{QueueName: aws.String(ref)}
	name := ref
	if strings.HasPrefix(ref, "arn:") {
		a, ok := parseARN(ref)
		if !ok {
			return "", broker.Errorf(broker.ErrNotFound, "find queue `"+ref+"`",
				"not an SQS queue ARN (want arn:aws:sqs:REGION:ACCOUNT:NAME): check the queue argument")
		}
		name = a.name
		in.QueueName = aws.String(a.name)
		if a.account != "" {
			in.QueueOwnerAWSAccountId = aws.String(a.account)
		}
	}
	out, err := b.api.GetQueueUrl(ctx, in)
	if err != nil && in.QueueOwnerAWSAccountId != nil && errors.Is(translateErr("", err), broker.ErrNotFound) {
		// Emulators invent their own account IDs; retry in the caller's account.
		in.QueueOwnerAWSAccountId = nil
		out, err = b.api.GetQueueUrl(ctx, in)
	}
	if err != nil {
		terr := translateErr("find queue `"+name+"`", err)
		if errors.Is(terr, broker.ErrNotFound) {
			return "", b.notFound(name)
		}
		return "", terr
	}
	u = aws.ToString(out.QueueUrl)
	b.mu.Lock()
	b.urls[ref] = u
	b.mu.Unlock()
	return u, nil
}

// notFound is the error for a queue that does not exist.
func (b *Broker) notFound(name string) error {
	return &broker.Error{Kind: broker.ErrNotFound, Op: "find queue `" + name + "`",
		Hint: broker.Hintf("queue `%s` not found in %s: check the name, %s and %s, or list queues with %s", name, b.String(), broker.OptRegion, broker.OptEndpointURL, broker.Cmd("queues"))}
}

// queueARN returns the ARN of the queue at url (GetQueueAttributes QueueArn),
// cached for the life of the Broker.
func (b *Broker) queueARN(ctx context.Context, url string) (string, error) {
	b.mu.Lock()
	a, ok := b.arns[url]
	b.mu.Unlock()
	if ok {
		return a, nil
	}
	out, err := b.api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", b.queueErr("read queue `"+nameFromURL(url)+"`", url, err)
	}
	a = out.Attributes[string(types.QueueAttributeNameQueueArn)]
	b.rememberARN(url, a)
	return a, nil
}

// attributes returns every attribute of the queue at url (GetQueueAttributes
// All): ApproximateNumberOfMessages, RedrivePolicy, QueueArn, FifoQueue, …
func (b *Broker) attributes(ctx context.Context, url string) (map[string]string, error) {
	out, err := b.api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		return nil, b.queueErr("read queue `"+nameFromURL(url)+"`", url, err)
	}
	if out.Attributes == nil {
		out.Attributes = map[string]string{}
	}
	b.rememberARN(url, out.Attributes[string(types.QueueAttributeNameQueueArn)])
	return out.Attributes, nil
}

// queueErr translates err and, for a missing queue, names it with the fix.
func (b *Broker) queueErr(op, url string, err error) error {
	terr := translateErr(op, err)
	if errors.Is(terr, broker.ErrNotFound) {
		return b.notFound(nameFromURL(url))
	}
	return terr
}

func (b *Broker) rememberARN(url, arn string) {
	if arn == "" {
		return
	}
	b.mu.Lock()
	b.arns[url] = arn
	b.urls[arn] = url
	b.mu.Unlock()
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")
}

// nameFromURL is the queue name, the last path segment of its URL.
func nameFromURL(u string) string {
	if p, err := url.Parse(u); err == nil && p.Path != "" {
		u = p.Path
	}
	u = strings.TrimRight(u, "/")
	if i := strings.LastIndexByte(u, '/'); i >= 0 {
		return u[i+1:]
	}
	return u
}

type arn struct{ partition, region, account, name string }

// parseARN splits arn:PARTITION:sqs:REGION:ACCOUNT:NAME.
func parseARN(s string) (arn, bool) {
	p := strings.Split(s, ":")
	if len(p) != 6 || p[0] != "arn" || p[2] != "sqs" || p[5] == "" {
		return arn{}, false
	}
	return arn{partition: p[1], region: p[3], account: p[4], name: p[5]}, true
}

// nameFromARN is the queue name of an ARN, or the input when it is not one.
func nameFromARN(s string) string {
	if a, ok := parseARN(s); ok {
		return a.name
	}
	return s
}

// queueName is the queue name of a name, URL or ARN reference.
func queueName(ref string) string {
	switch {
	case isURL(ref):
		return nameFromURL(ref)
	case strings.HasPrefix(ref, "arn:"):
		return nameFromARN(ref)
	}
	return ref
}
