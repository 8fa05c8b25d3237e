package rabbitrules

import (
	"encoding/json"
	"fmt"
	"testing"
)

func TestEffectiveDeliveryLimit(t *testing.T) {
	lim := func(n int64) map[string]any { return map[string]any{"x-delivery-limit": n} }
	pol := func(n any) map[string]any { return map[string]any{"delivery-limit": n} }
	tests := []struct {
		name         string
		args, policy map[string]any
		major        int
		limited      bool
		limit        int64
		isDefault    bool
	}{
		{name: "3.x none", major: 3},
		{name: "unknown version none", major: 0},
		{name: "4.x none: the default", major: 4, limited: true, limit: 20, isDefault: true},
		{name: "argument", args: lim(5), major: 3, limited: true, limit: 5},
		{name: "policy", policy: pol(json.Number("7")), major: 4, limited: true, limit: 7},
		{name: "the lower of both", args: lim(5), policy: pol(int64(3)), major: 3, limited: true, limit: 3},
		{name: "the lower of both, argument lower", args: lim(2), policy: pol(int64(9)), major: 4, limited: true, limit: 2},
		{name: "4.x negative turns it off", args: lim(-1), major: 4},
		{name: "4.x negative policy and a limit: the higher (the limit)", args: lim(5), policy: pol(int64(-1)), major: 4, limited: true, limit: 5},
		{name: "4.x both negative", args: lim(-1), policy: pol(int64(-1)), major: 4},
		{name: "3.x negative: the first return removes it", args: lim(-1), major: 3, limited: true, limit: 0},
		{name: "3.x negative policy is the lower", args: lim(5), policy: pol(int64(-1)), major: 3, limited: true, limit: 0},
		{name: "zero: the first return removes it", args: lim(0), major: 4, limited: true, limit: 0},
	}
	for _, tt := range tests {
		d := Effective(Sources{Args: tt.args, Policy: tt.policy, Quorum: true, Version: Version{Major: tt.major, Known: tt.major > 0}})
		if d.Limited != tt.limited || d.Limit != tt.limit || d.LimitDefault != tt.isDefault {
			t.Errorf("%s: limited %v limit %d default %v, want %v %d %v", tt.name, d.Limited, d.Limit, d.LimitDefault, tt.limited, tt.limit, tt.isDefault)
		}
	}
	if d := Effective(Sources{Args: lim(5), Version: ParseVersion("4.0.5")}); d.Limited || d.Limit != 0 || d.DeliveryLimitSet {
		t.Errorf("a classic queue has no delivery limit: limited %t, limit %d", d.Limited, d.Limit)
	}
}

func deref(p *int64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

// TestEffectiveLengthLimit: the lower of argument and policy applies; on a
// classic queue the argument's overflow wins over the policy's, on a
// quorum queue the policy's; drop-head is the default once there is a
// limit.
func TestEffectiveLengthLimit(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		quorum          bool
		args, policy    map[string]any
		maxLen, maxByte *int64
		overflow        string
	}{
		{false, nil, nil, nil, nil, ""},
		{false, map[string]any{"x-overflow": "reject-publish"}, nil, nil, nil, ""},
		{false, map[string]any{"x-max-length": int64(10)}, nil, i(10), nil, "drop-head"},
		{false, map[string]any{"x-max-length": int64(10)}, map[string]any{"max-length": int64(5), "overflow": "reject-publish"}, i(5), nil, "reject-publish"},
		{false, map[string]any{"x-max-length": int64(3), "x-overflow": "reject-publish-dlx"}, map[string]any{"max-length": int64(5), "overflow": "drop-head"}, i(3), nil, "reject-publish-dlx"},
		{false, nil, map[string]any{"max-length-bytes": int64(1024)}, nil, i(1024), "drop-head"},
		{true, map[string]any{"x-max-length": int64(3), "x-overflow": "reject-publish"}, map[string]any{"overflow": "drop-head"}, i(3), nil, "drop-head"},
		{true, map[string]any{"x-max-length": int64(3), "x-overflow": "reject-publish"}, nil, i(3), nil, "reject-publish"},
	} {
		e := Effective(Sources{Args: tc.args, Policy: tc.policy, Quorum: tc.quorum})
		got := fmt.Sprint(deref(e.MaxLength), deref(e.MaxLengthBytes), e.Overflow)
		if want := fmt.Sprint(deref(tc.maxLen), deref(tc.maxByte), tc.overflow); got != want {
			t.Errorf("quorum %v, args %v, policy %v: %s, want %s", tc.quorum, tc.args, tc.policy, got, want)
		}
	}
}

// TestEffectiveTTLAndDeadLetter: the lower TTL applies whichever sets it;
// the argument's dead-letter exchange and key win over the policy's.
func TestEffectiveTTLAndDeadLetter(t *testing.T) {
	e := Effective(Sources{
		Args:   map[string]any{"x-message-ttl": int64(60000), "x-dead-letter-exchange": "a"},
		Policy: map[string]any{"message-ttl": int64(1000), "dead-letter-exchange": "p", "dead-letter-routing-key": "k"},
	})
	if got := fmt.Sprintln(deref(e.MessageTTL), e.DeadLetterSet, e.DeadLetterExchange, e.HasRoutingKey, e.DeadLetterRoutingKey); got != "1000 true a true k\n" {
		t.Errorf("got %s, want 1000 true a true k", got)
	}
	e = Effective(Sources{Args: map[string]any{"x-message-ttl": "500"}, Policy: map[string]any{"message-ttl": int64(1000)}})
	if deref(e.MessageTTL) != "500" || e.DeadLetterSet {
		t.Errorf("a quoted TTL: ttl %s, dead-letter %v; want 500, false", deref(e.MessageTTL), e.DeadLetterSet)
	}
}

// TestOperatorPolicy: where a policy and an operator policy both set a
// limit the lower applies; for other keys the operator's.
func TestOperatorPolicy(t *testing.T) {
	e := Effective(Sources{
		Args:           map[string]any{"x-max-length": int64(100)},
		Policy:         map[string]any{"max-length": int64(50), "delivery-limit": int64(10), "overflow": "drop-head"},
		OperatorPolicy: map[string]any{"max-length": int64(70), "delivery-limit": int64(3), "message-ttl": int64(9), "overflow": "reject-publish"},
		Quorum:         true,
		Version:        ParseVersion("4.3.6"),
	})
	if got := fmt.Sprintln(deref(e.MaxLength), e.Limit, deref(e.MessageTTL), e.Overflow); got != "50 3 9 reject-publish\n" {
		t.Errorf("got %s, want 50 3 9 reject-publish", got)
	}
	p := map[string]any{"max-length": int64(5)}
	if got := MergeOperatorPolicy(p, nil); fmt.Sprint(got) != fmt.Sprint(p) {
		t.Errorf("no operator policy: %v, want %v", got, p)
	}
}

// TestEffectiveDelayedRetry: a quorum queue's delayed retry, the argument's
// else the policy's; none on a classic queue.
func TestEffectiveDelayedRetry(t *testing.T) {
	e := Effective(Sources{Quorum: true,
		Args:   map[string]any{"x-delayed-retry-type": "failed", "x-delayed-retry-min": int64(1000)},
		Policy: map[string]any{"delayed-retry-type": "all", "delayed-retry-max": json.Number("30000")}})
	if got := fmt.Sprintln(e.DelayedRetryType, deref(e.DelayedRetryMin), deref(e.DelayedRetryMax)); got != "failed 1000 30000\n" {
		t.Errorf("got %q, want failed 1000 30000", got)
	}
	if e := Effective(Sources{Args: map[string]any{"x-delayed-retry-type": "all"}}); e.DelayedRetryType != "" {
		t.Errorf("a classic queue has a delayed retry: %q", e.DelayedRetryType)
	}
}
