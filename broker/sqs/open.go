package sqs

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/dlq-tools/dlq/broker"
)

// Adapter is the SQS adapter for a front end's registry: sqs:// and
// sqs://REGION, with the context fields region, endpoint and profile, and
// queues given by their URL or ARN.
func Adapter() broker.Adapter {
	return broker.Adapter{
		Name:      "sqs",
		Schemes:   []string{"sqs://"},
		About:     []string{"Amazon SQS"},
		Open:      openSettings,
		QueueRef:  queueRefSettings,
		QueueNoun: "an SQS queue",
		Example:   "sqs://REGION",
		Flags: []broker.Flag{
			{Option: broker.OptRegion, Field: "region", Usage: "AWS region (SQS)"},
			{Option: broker.OptEndpointURL, Field: "endpoint", Usage: "SQS endpoint URL, for emulators or VPC endpoints"},
		},
	}
}

func openSettings(ctx context.Context, s broker.Settings) (broker.Broker, error) {
	region, err := BrokerRegion(s.Ref)
	if err != nil {
		return nil, err
	}
	if r := s.Field("region"); r != "" && region != "" && r != region && s.FromFlag["region"] {
		return nil, broker.Hintf("%s contradicts the broker %s: drop one of them", broker.OptRegion.With(r), s.Ref)
	}
	if region == "" {
		region = s.Field("region")
	}
	b, err := Open(ctx, Config{Region: region, Endpoint: s.Field("endpoint"), Profile: s.Field("profile"), Timeout: s.Timeout, Logger: s.Logger})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// queueRefSettings: a queue URL or ARN opens SQS in the region it names
// (an emulator's http:// URL at its host), with the default broker's other
// settings when that is SQS.
func queueRefSettings(ref string, def broker.Settings) (broker.Settings, bool) {
	region, endpoint, ok := ParseQueueRef(ref)
	if !ok {
		return broker.Settings{}, false
	}
	s := def
	if r, _ := BrokerRegion(def.Ref); r != "" && s.Field("region") == "" {
		s = s.With("region", r)
	}
	s.Ref = "sqs://"
	if region != "" {
		s = s.With("region", region)
	}
	if endpoint != "" && s.Field("endpoint") == "" {
		s = s.With("endpoint", endpoint)
	}
	return s, true
}

var regionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d+$`) })

// BrokerRegion is the region of sqs://REGION, "" for sqs://.
func BrokerRegion(ref string) (string, error) {
	rest := strings.TrimPrefix(strings.TrimPrefix(ref, "sqs:"), "//")
	rest = strings.TrimSuffix(rest, "/")
	if rest == "" {
		return "", nil
	}
	if !regionRE().MatchString(rest) {
		return "", fmt.Errorf("malformed SQS broker %q: want sqs:// or sqs://REGION (e.g. sqs://eu-west-1); give queues by name, URL or ARN as the argument", broker.Redact(ref))
	}
	return rest, nil
}

// ParseQueueRef recognises an SQS queue URL or ARN and returns the region
// it names ("" when the URL does not say) and, for a non-AWS URL, the
// endpoint.
func ParseQueueRef(ref string) (region, endpoint string, ok bool) {
	if strings.HasPrefix(ref, "arn:") {
		parts := strings.SplitN(ref, ":", 6)
		if len(parts) == 6 && parts[2] == "sqs" && parts[5] != "" {
			return parts[3], "", true
		}
		return "", "", false
	}
	u, err := url.Parse(ref)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", "", false
	}
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(segs) != 2 || segs[0] == "" || segs[1] == "" {
		return "", "", false
	}
	host := u.Hostname()
	if strings.HasSuffix(host, ".amazonaws.com") {
		labels := strings.Split(host, ".")
		switch {
		case len(labels) >= 4 && labels[0] == "sqs":
			region = labels[1] // sqs.REGION.amazonaws.com
		case len(labels) >= 4 && labels[1] == "queue":
			region = labels[0] // REGION.queue.amazonaws.com
		}
		return region, "", true
	}
	return "", u.Scheme + "://" + u.Host, true
}
