package rabbitmq

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/internal/testdiff"
)

var (
	t0 = time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Minute)
	t2 = t0.Add(2 * time.Minute)
)

// ladderHeaders are what RabbitMQ 3.10 writes after a message went
// orders → orders.retry.1 (expired) → orders → orders.dlq: newest first.
func ladderHeaders() amqp.Table {
	return amqp.Table{
		"x-death": []any{
			amqp.Table{"count": int64(2), "reason": "rejected", "queue": "orders", "exchange": "orders-x",
				"routing-keys": []any{"order.created"}, "time": t1.Local()},
			amqp.Table{"count": int64(1), "reason": "expired", "queue": "orders.retry.1", "exchange": "retry-x",
				"routing-keys": []any{"orders"}, "time": t2.Local(), "original-expiration": "1000"},
		},
		"x-first-death-queue":    "orders",
		"x-first-death-reason":   "rejected",
		"x-first-death-exchange": "orders-x",
		"tenant":                 "acme",
	}
}

func TestDeathOf(t *testing.T) {
	tests := []struct {
		name    string
		headers amqp.Table
		want    *broker.Death
	}{
		{name: "no headers", headers: nil, want: nil},
		{name: "no death", headers: amqp.Table{"a": "b"}, want: nil},
		{
			name: "single rejection",
			headers: amqp.Table{
				"x-death": []any{amqp.Table{"count": int64(1), "reason": "rejected", "queue": "q", "exchange": "",
					"routing-keys": []any{"q"}, "time": t0}},
				"x-first-death-queue": "q", "x-first-death-reason": "rejected", "x-first-death-exchange": "",
			},
			want: &broker.Death{Reason: "rejected", Queue: "q", RoutingKeys: []string{"q"}, Count: 1, First: t0, Last: t0,
				FirstReason: "rejected", FirstQueue: "q",
				History: []broker.DeathEntry{{Reason: "rejected", Queue: "q", RoutingKeys: []string{"q"}, Count: 1, Time: t0}}},
		},
		{
			name:    "retry ladder",
			headers: ladderHeaders(),
			want: &broker.Death{Reason: "rejected", Queue: "orders", Exchange: "orders-x", RoutingKeys: []string{"order.created"},
				Count: 3, First: t1, Last: t2, FirstReason: "rejected", FirstQueue: "orders",
				History: []broker.DeathEntry{
					{Reason: "rejected", Queue: "orders", Exchange: "orders-x", RoutingKeys: []string{"order.created"}, Count: 2, Time: t1},
					{Reason: "expired", Queue: "orders.retry.1", Exchange: "retry-x", RoutingKeys: []string{"orders"}, Count: 1, Time: t2},
				}},
		},
		{
			name: "delivery limit from a quorum queue, count as int32",
			headers: amqp.Table{
				"x-death": []any{amqp.Table{"count": int32(1), "reason": "delivery_limit", "queue": "qq", "exchange": "dlx",
					"routing-keys": []any{"qq"}, "time": t0}},
			},
			want: &broker.Death{Reason: "delivery_limit", Queue: "qq", Exchange: "dlx", RoutingKeys: []string{"qq"}, Count: 1,
				First: t0, Last: t0, FirstReason: "delivery_limit", FirstQueue: "qq",
				History: []broker.DeathEntry{{Reason: "delivery_limit", Queue: "qq", Exchange: "dlx", RoutingKeys: []string{"qq"}, Count: 1, Time: t0}}},
		},
		{
			name: "counts at the int64 limit add up to the limit, not around it",
			headers: amqp.Table{
				"x-death": []any{amqp.Table{"count": int64(math.MaxInt64), "reason": "rejected", "queue": "q"},
					amqp.Table{"count": int64(5), "reason": "expired", "queue": "q.retry"}},
			},
			want: &broker.Death{Reason: "rejected", Queue: "q", Count: math.MaxInt64, FirstReason: "expired", FirstQueue: "q.retry",
				History: []broker.DeathEntry{{Reason: "rejected", Queue: "q", Count: math.MaxInt64}, {Reason: "expired", Queue: "q.retry", Count: 5}}},
		},
		{
			name:    "x-death stripped, first-death kept",
			headers: amqp.Table{"x-first-death-queue": "q", "x-first-death-reason": "expired", "x-first-death-exchange": "x"},
			want:    &broker.Death{Reason: "expired", Queue: "q", Exchange: "x", Count: 1, FirstReason: "expired", FirstQueue: "q"},
		},
		{
			name: "4.x: x-death stripped, first and last death kept",
			headers: amqp.Table{"x-first-death-queue": "q", "x-first-death-reason": "rejected", "x-first-death-exchange": "x",
				"x-last-death-queue": "q.retry", "x-last-death-reason": "expired", "x-last-death-exchange": "retry-x"},
			want: &broker.Death{Reason: "rejected", Queue: "q", Exchange: "x", Count: 2, FirstReason: "rejected", FirstQueue: "q"},
		},
		{
			name: "retry ladder ending in the retry delay: the origin is the queue that rejected it",
			headers: amqp.Table{
				"x-death": []any{
					amqp.Table{"count": int64(1), "reason": "expired", "queue": "orders.retry", "exchange": "retry-x",
						"routing-keys": []any{"orders"}, "time": t1},
					amqp.Table{"count": int64(1), "reason": "rejected", "queue": "orders", "exchange": "orders-x",
						"routing-keys": []any{"order.created"}, "time": t0},
				},
			},
			want: &broker.Death{Reason: "rejected", Queue: "orders", Exchange: "orders-x", RoutingKeys: []string{"order.created"},
				Count: 2, First: t0, Last: t1, FirstReason: "rejected", FirstQueue: "orders",
				History: []broker.DeathEntry{
					{Reason: "expired", Queue: "orders.retry", Exchange: "retry-x", RoutingKeys: []string{"orders"}, Count: 1, Time: t1},
					{Reason: "rejected", Queue: "orders", Exchange: "orders-x", RoutingKeys: []string{"order.created"}, Count: 1, Time: t0},
				}},
		},
		{
			name: "a work queue's own TTL after a retry stays the origin",
			headers: amqp.Table{
				"x-death": []any{
					amqp.Table{"count": int64(1), "reason": "expired", "queue": "orders"},
					amqp.Table{"count": int64(1), "reason": "expired", "queue": "orders.retry"},
					amqp.Table{"count": int64(1), "reason": "rejected", "queue": "orders"},
				},
			},
			want: &broker.Death{Reason: "expired", Queue: "orders", Count: 3, FirstReason: "rejected", FirstQueue: "orders",
				History: []broker.DeathEntry{{Reason: "expired", Queue: "orders", Count: 1},
					{Reason: "expired", Queue: "orders.retry", Count: 1}, {Reason: "rejected", Queue: "orders", Count: 1}}},
		},
		{
			name: "an expiry with no rejection before it is the origin",
			headers: amqp.Table{
				"x-death": []any{
					amqp.Table{"count": int64(1), "reason": "expired", "queue": "b"},
					amqp.Table{"count": int64(1), "reason": "maxlen", "queue": "a"},
				},
			},
			want: &broker.Death{Reason: "expired", Queue: "b", Count: 2, FirstReason: "maxlen", FirstQueue: "a",
				History: []broker.DeathEntry{{Reason: "expired", Queue: "b", Count: 1}, {Reason: "maxlen", Queue: "a", Count: 1}}},
		},
		{
			name:    "4.x: only the last death",
			headers: amqp.Table{"x-last-death-queue": "q", "x-last-death-reason": "delivery_limit", "x-last-death-exchange": ""},
			want:    &broker.Death{Reason: "delivery_limit", Queue: "q", Count: 1},
		},
		{
			name: "4.x: x-death wins over x-last-death",
			headers: amqp.Table{
				"x-death": []any{amqp.Table{"count": int64(1), "reason": "rejected", "queue": "q", "exchange": "",
					"routing-keys": []any{"q"}, "time": t0}},
				"x-first-death-queue": "q", "x-first-death-reason": "rejected", "x-first-death-exchange": "",
				"x-last-death-queue": "q", "x-last-death-reason": "rejected", "x-last-death-exchange": "",
			},
			want: &broker.Death{Reason: "rejected", Queue: "q", RoutingKeys: []string{"q"}, Count: 1, First: t0, Last: t0,
				FirstReason: "rejected", FirstQueue: "q",
				History: []broker.DeathEntry{{Reason: "rejected", Queue: "q", RoutingKeys: []string{"q"}, Count: 1, Time: t0}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := deathOf(fromTable(tt.headers))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("deathOf (-want +got):\n%s", testdiff.Diff(tt.want, got))
			}
		})
	}
}

func TestFromDelivery(t *testing.T) {
	d := &amqp.Delivery{
		Headers:         ladderHeaders(),
		ContentType:     "application/json",
		ContentEncoding: "gzip",
		DeliveryMode:    2,
		Priority:        3,
		CorrelationId:   "corr",
		MessageId:       "",
		Timestamp:       t0.Local(),
		AppId:           "shop",
		Redelivered:     true,
		Exchange:        "",
		RoutingKey:      "orders.dlq",
		Body:            []byte(`{"id":1}`),
	}
	d.Headers["x-delivery-count"] = int64(2)
	d.Headers["x-acquired-count"] = int32(9)
	m := fromDelivery("orders.dlq", d)
	if m.AcquiredCount != 9 {
		t.Errorf("acquired count %d, want 9 (x-acquired-count)", m.AcquiredCount)
	}
	if m.System != broker.RabbitMQ || m.Queue != "orders.dlq" || string(m.Body) != `{"id":1}` {
		t.Errorf("message system %q, queue %q, body %s; want rabbitmq, orders.dlq, {\"id\":1}", m.System, m.Queue, m.Body)
	}
	if m.Properties.ContentType != "application/json" || m.Properties.ContentEncoding != "gzip" || m.Properties.Priority != 3 ||
		m.Properties.CorrelationID != "corr" || m.Properties.AppID != "shop" || m.Properties.DeliveryMode != 2 {
		t.Errorf("properties: content type %q, encoding %q, priority %d, correlation %q, app %q, mode %d; want application/json, gzip, 3, corr, shop, 2",
			m.Properties.ContentType, m.Properties.ContentEncoding, m.Properties.Priority, m.Properties.CorrelationID, m.Properties.AppID, m.Properties.DeliveryMode)
	}
	if !m.Timestamp.Equal(t0) || m.Timestamp.Location() != time.UTC {
		t.Errorf("timestamp %v, want %v in UTC", m.Timestamp, t0)
	}
	if m.DeliveryCount != 2 || !m.Redelivered {
		t.Errorf("delivery count %d redelivered %v", m.DeliveryCount, m.Redelivered)
	}
	if m.Death == nil {
		t.Errorf("no death record")
	} else if m.Death.Queue != "orders" || m.Death.Count != 3 {
		t.Errorf("death queue %q, count %d; want orders, 3", m.Death.Queue, m.Death.Count)
	}
	if !strings.HasPrefix(m.ID, "h-") {
		t.Errorf("ID %q: want a hash fingerprint for a message without message-id", m.ID)
	}
	// The fingerprint ignores what the broker changes while a message waits.
	d2 := *d
	d2.Headers = amqp.Table{"tenant": "acme", "x-delivery-count": int64(7)}
	d2.Redelivered = false
	d2.Timestamp = t0 // another zone, same instant
	if m2 := fromDelivery("elsewhere", &d2); m2.ID != m.ID {
		t.Errorf("fingerprint changed with death headers / zone: %s vs %s", m2.ID, m.ID)
	}
	d3 := *d
	d3.MessageId = "order-1"
	if m3 := fromDelivery("q", &d3); m3.ID != "order-1" {
		t.Errorf("ID %q, want the message-id", m3.ID)
	}
	d4 := *d
	d4.Headers = amqp.Table{"x-stream-offset": int64(42)}
	if m4 := fromDelivery("s", &d4); m4.Position != "42" {
		t.Errorf("stream position %q", m4.Position)
	}
}

func TestHeaderTypes(t *testing.T) {
	in := amqp.Table{
		"bool": true, "i8": int8(-8), "u8": uint8(8), "i16": int16(-16), "u16": uint16(16),
		"i32": int32(-32), "u32": uint32(32), "i64": int64(-64), "f32": float32(1.5), "f64": 2.25,
		"str": "s", "bytes": []byte{0, 1}, "dec": amqp.Decimal{Scale: 2, Value: 1234}, "time": t0,
		"nil": nil, "arr": []any{int32(1), "two", amqp.Table{"deep": []any{amqp.Decimal{Scale: 1, Value: 5}}}},
		"table": amqp.Table{"nested": amqp.Table{"x": int16(3)}},
	}
	got := fromTable(in)
	want := map[string]any{
		"bool": true, "i8": int8(-8), "u8": uint8(8), "i16": int16(-16), "u16": uint16(16),
		"i32": int32(-32), "u32": uint32(32), "i64": int64(-64), "f32": float32(1.5), "f64": 2.25,
		"str": "s", "bytes": []byte{0, 1}, "dec": broker.Decimal{Scale: 2, Value: 1234}, "time": t0,
		"nil": nil, "arr": []any{int32(1), "two", map[string]any{"deep": []any{broker.Decimal{Scale: 1, Value: 5}}}},
		"table": map[string]any{"nested": map[string]any{"x": int16(3)}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fromTable (-want +got):\n%s", testdiff.Diff(want, got))
	}
	back, err := toTable(got)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, in) {
		t.Fatalf("toTable(fromTable(x)) (-want +got):\n%s", testdiff.Diff(in, back))
	}
	if err := back.Validate(); err != nil {
		t.Fatalf("round-tripped table is not valid AMQP: %v", err)
	}
}

func TestToValue(t *testing.T) {
	tests := []struct {
		in      any
		want    any
		wantErr string
	}{
		{in: 5, want: int64(5)},
		{in: int64(math.MaxInt64), want: int64(math.MaxInt64)},
		{in: uint(7), want: int64(7)},
		{in: uint64(math.MaxUint64), wantErr: "too large"},
		{in: json.Number("12"), want: int64(12)},
		{in: json.Number("1.5"), want: 1.5},
		{in: []string{"a", "b"}, want: []any{"a", "b"}},
		{in: struct{}{}, wantErr: "no AMQP header type"},
		{in: []any{complex(1, 2)}, wantErr: "array element 0"},
	}
	for _, tt := range tests {
		got, err := toValue(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("toValue(%#v) error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("toValue(%#v) = %v; (-want +got):\n%s", tt.in, err, testdiff.Diff(tt.want, got))
		}
	}
	if _, err := toTable(map[string]any{"bad": struct{}{}}); err == nil || !strings.Contains(err.Error(), `header "bad"`) {
		t.Errorf("toTable error does not name the header: %v", err)
	}
}

func TestToPublishing(t *testing.T) {
	b := &Broker{user: "dlqtest"}
	m := &broker.Message{
		Body:    []byte("x"),
		Headers: map[string]any{"n": 3, "d": broker.Decimal{Scale: 1, Value: 2}},
		Properties: broker.Properties{ContentType: "text/plain", ContentEncoding: "utf-8", MessageID: "m1",
			CorrelationID: "c1", Timestamp: t0, Priority: 4, UserID: "someone-else", AppID: "app", Type: "t", ReplyTo: "r", Expiration: "60000"},
	}
	p, err := b.toPublishing(m)
	if err != nil {
		t.Fatal(err)
	}
	if p.DeliveryMode != amqp.Persistent {
		t.Errorf("delivery mode %d, want persistent by default", p.DeliveryMode)
	}
	if p.ContentType != "text/plain" || p.ContentEncoding != "utf-8" || p.MessageId != "m1" || p.CorrelationId != "c1" ||
		!p.Timestamp.Equal(t0) || p.Priority != 4 || p.AppId != "app" || p.Type != "t" || p.ReplyTo != "r" || p.Expiration != "60000" {
		t.Errorf("publishing properties (-want +got):\n%s", testdiff.Diff(
			[]any{"text/plain", "utf-8", "m1", "c1", t0, uint8(4), "app", "t", "r", "60000"},
			[]any{p.ContentType, p.ContentEncoding, p.MessageId, p.CorrelationId, p.Timestamp, p.Priority, p.AppId, p.Type, p.ReplyTo, p.Expiration}))
	}
	if p.UserId != "" {
		t.Errorf("user_id %q of another user kept: RabbitMQ would refuse the publish", p.UserId)
	}
	if p.Headers["n"] != int64(3) || p.Headers["d"] != (amqp.Decimal{Scale: 1, Value: 2}) {
		t.Errorf("headers n %#v, d %#v; want int64(3), amqp.Decimal{Scale: 1, Value: 2}", p.Headers["n"], p.Headers["d"])
	}
	m.Properties.UserID = "dlqtest"
	m.Properties.DeliveryMode = 1
	p, _ = b.toPublishing(m)
	if p.UserId != "dlqtest" || p.DeliveryMode != 1 {
		t.Errorf("own user_id or transient mode not kept: user_id %q, mode %d; want dlqtest, 1", p.UserId, p.DeliveryMode)
	}
}

// fuzzTable builds an AMQP table from fuzz bytes: each step picks a type and
// takes its value from the following bytes.
func fuzzTable(data []byte, depth int) (amqp.Table, []byte) {
	t := amqp.Table{}
	n := 0
	for len(data) > 0 && n < 16 {
		n++
		op := data[0]
		data = data[1:]
		key := string(rune('a' + int(op)%26))
		var v any
		v, data = fuzzValue(op, data, depth)
		t[key] = v
	}
	return t, data
}

func fuzzValue(op byte, data []byte, depth int) (any, []byte) {
	take := func(n int) []byte {
		if len(data) < n {
			b := make([]byte, n)
			copy(b, data)
			data = nil
			return b
		}
		b := data[:n]
		data = data[n:]
		return b
	}
	switch op % 17 {
	case 0:
		return take(1)[0]&1 == 1, data
	case 1:
		return int8(take(1)[0]), data
	case 2:
		return take(1)[0], data
	case 3:
		return int16(binary.BigEndian.Uint16(take(2))), data
	case 4:
		return binary.BigEndian.Uint16(take(2)), data
	case 5:
		return int32(binary.BigEndian.Uint32(take(4))), data
	case 6:
		return binary.BigEndian.Uint32(take(4)), data
	case 7:
		return int64(binary.BigEndian.Uint64(take(8))), data
	case 8:
		return math.Float32frombits(binary.BigEndian.Uint32(take(4))), data
	case 9:
		return math.Float64frombits(binary.BigEndian.Uint64(take(8))), data
	case 10:
		b := take(5)
		return amqp.Decimal{Scale: b[0], Value: int32(binary.BigEndian.Uint32(b[1:]))}, data
	case 11:
		return string(take(int(take(1)[0] % 8))), data
	case 12:
		return append([]byte(nil), take(int(take(1)[0]%8))...), data
	case 13:
		return time.Unix(int64(binary.BigEndian.Uint32(take(4))), 0), data
	case 14:
		return nil, data
	case 15:
		if depth > 3 {
			return "deep", data
		}
		n := int(take(1)[0] % 4)
		a := make([]any, 0, n)
		for i := 0; i < n && len(data) > 0; i++ {
			var v any
			o := data[0]
			v, data = fuzzValue(o, data[1:], depth+1)
			a = append(a, v)
		}
		return a, data
	default:
		if depth > 3 {
			return "deep", data
		}
		sub := take(int(take(1)[0] % 32))
		t, _ := fuzzTable(sub, depth+1)
		return t, data
	}
}

// FuzzHeaderConversion checks that converting any AMQP table to neutral
// values and back gives the same table, a valid AMQP table, and a stable
// fingerprint.
func FuzzHeaderConversion(f *testing.F) {
	f.Add([]byte{0, 1, 1, 0xff, 10, 2, 0, 0, 0, 5, 15, 3, 11, 2, 'h', 'i', 16, 6, 5, 0, 0, 0, 9})
	f.Add([]byte("x-death is a table of arrays"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, _ := fuzzTable(data, 0)
		neutral := fromTable(in)
		back, err := toTable(neutral)
		if err != nil {
			t.Fatalf("toTable: %v", err)
		}
		if err := back.Validate(); err != nil {
			t.Fatalf("not a valid AMQP table: %v", err)
		}
		if !equalTables(back, in) {
			t.Fatalf("round trip changed the table (-in +back):\n%s", testdiff.Diff(in, back))
		}
		m1 := &broker.Message{Body: data, Headers: neutral}
		m2 := &broker.Message{Body: data, Headers: fromTable(back)}
		if broker.Fingerprint(m1) != broker.Fingerprint(m2) {
			t.Fatalf("fingerprint changed over a round trip")
		}
		_ = deathOf(neutral)
	})
}

// equalTables compares like reflect.DeepEqual but treats NaN as equal to
// itself and times by instant.
func equalTables(a, b any) bool {
	switch x := a.(type) {
	case amqp.Table:
		y, ok := b.(amqp.Table)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equalTables(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalTables(x[i], y[i]) {
				return false
			}
		}
		return true
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || (math.IsNaN(x) && math.IsNaN(y)))
	case float32:
		y, ok := b.(float32)
		return ok && (x == y || (x != x && y != y))
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	}
	return reflect.DeepEqual(a, b)
}

// TestDeathHeadersByVersion pins what dlq reads from a real dead letter,
// and where RabbitMQ 4.x differs from 3.10: 4.x adds x-last-death-*, sends
// no x-delivery-count on a quorum message's first delivery, and starts a new
// death record for a message a client published again with its death
// headers (3.10 goes on counting in them).
func TestDeathHeadersByVersion(t *testing.T) {
	b, _ := openTest(t)
	ctx := context.Background()
	major := b.serverMajor(ctx)
	dlq := brokertest.Name(t, "dlq")
	src := brokertest.Name(t, "src")
	declareQueue(t, b, dlq, nil)
	declareQueue(t, b, src, amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq})
	publishN(t, b, src, "m", 1, amqp.Table{"app": "kept"})
	reject := func() {
		t.Helper()
		err := b.withChannel(ctx, func(ch *amqp.Channel) error {
			d, ok, err := ch.Get(src, false)
			if err != nil || !ok {
				return fmt.Errorf("get: %v, ok %v", err, ok)
			}
			return ch.Reject(d.DeliveryTag, false)
		})
		if err != nil {
			t.Fatal(err)
		}
		waitDepth(t, b, dlq, 1)
	}
	take := func() *amqp.Delivery {
		t.Helper()
		var got amqp.Delivery
		err := b.withChannel(ctx, func(ch *amqp.Channel) error {
			d, ok, err := ch.Get(dlq, true)
			if err != nil || !ok {
				return fmt.Errorf("get: %v, ok %v", err, ok)
			}
			got = d
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return &got
	}
	reject()
	first := take()
	m := fromDelivery(dlq, first)
	if m.Death == nil {
		t.Fatalf("first death: no death record")
	}
	if m.Death.Reason != "rejected" || m.Death.Queue != src || m.Death.Count != 1 || m.Death.FirstQueue != src || m.Headers["app"] != "kept" {
		t.Fatalf("first death: reason %q, queue %q, count %d, first queue %q, app header %v; want rejected, %s, 1, %s, kept",
			m.Death.Reason, m.Death.Queue, m.Death.Count, m.Death.FirstQueue, m.Headers["app"], src, src)
	}
	if _, ok := first.Headers["x-last-death-queue"]; ok != (major >= 4) {
		t.Errorf("RabbitMQ %d: x-last-death-queue present = %v", major, ok)
	}
	// A client publishes it again with its death headers, and it dies again.
	err := b.withChannel(ctx, func(ch *amqp.Channel) error {
		return ch.Publish("", src, false, false, amqp.Publishing{MessageId: "m-0", Headers: first.Headers, Body: first.Body})
	})
	if err != nil {
		t.Fatal(err)
	}
	waitDepth(t, b, src, 1)
	reject()
	again := fromDelivery(dlq, take())
	want := int64(2)
	if major >= 4 {
		want = 1 // a new record
	}
	if again.Death == nil {
		t.Errorf("RabbitMQ %d: no death after a client republished it", major)
	} else if again.Death.Count != want || again.Death.Queue != src {
		t.Errorf("RabbitMQ %d: death after a client republished it: queue %q, count %d; want %s, %d", major, again.Death.Queue, again.Death.Count, src, want)
	}

	// The first delivery of a quorum message.
	qq := brokertest.Name(t, "qq")
	declareQueue(t, b, qq, amqp.Table{"x-queue-type": "quorum"})
	publishN(t, b, qq, "q", 1, nil)
	err = b.withChannel(ctx, func(ch *amqp.Channel) error {
		d, ok, err := ch.Get(qq, true)
		if err != nil || !ok {
			return fmt.Errorf("get: %v, ok %v", err, ok)
		}
		if _, has := d.Headers["x-delivery-count"]; has == (major >= 4) {
			t.Errorf("RabbitMQ %d: x-delivery-count on the first delivery: %v", major, d.Headers["x-delivery-count"])
		}
		if n := fromDelivery(qq, &d).DeliveryCount; n != 0 {
			t.Errorf("DeliveryCount of a first delivery = %d", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The first death comes from the x-death array, not from x-first-death-*:
// since RabbitMQ 4.1 those can be missing, and x-first-death-queue can name
// a later death (rabbitmq-server#15385).
func TestDeathFirstFromXDeath(t *testing.T) {
	t1 := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Hour)
	xdeath := []any{
		map[string]any{"queue": "orders.retry", "reason": "expired", "count": int64(1), "time": t2, "exchange": ""},
		map[string]any{"queue": "orders", "reason": "rejected", "count": int64(1), "time": t1, "exchange": "orders-x"},
	}
	const want = "first rejected in orders at 2026-03-14T10:00:00Z, last 2026-03-14T11:00:00Z"
	for name, c := range map[string]struct {
		h    map[string]any
		want string
	}{
		"no x-first-death":          {map[string]any{"x-death": xdeath}, want},
		"x-first-death overwritten": {map[string]any{"x-death": xdeath, "x-first-death-queue": "orders.retry", "x-first-death-reason": "expired"}, want},
		"entries out of time order": {map[string]any{"x-death": []any{xdeath[1], xdeath[0]}, "x-first-death-queue": "orders.retry", "x-first-death-reason": "expired"}, want},
		// The same second: rejected in orders, expired in orders.retry,
		// rejected in orders again (its entry moved to the front).
		"a tie broken by x-first-death": {map[string]any{"x-death": []any{
			map[string]any{"queue": "orders", "reason": "rejected", "count": int64(2), "time": t1},
			map[string]any{"queue": "orders.retry", "reason": "expired", "count": int64(1), "time": t1}},
			"x-first-death-queue": "orders", "x-first-death-reason": "rejected"},
			"first rejected in orders at 2026-03-14T10:00:00Z, last 2026-03-14T10:00:00Z"},
	} {
		d := deathOf(c.h)
		if d == nil {
			t.Fatalf("%s: no death record", name)
		}
		got := fmt.Sprintf("first %s in %s at %s, last %s", d.FirstReason, d.FirstQueue, d.First.Format(time.RFC3339), d.Last.Format(time.RFC3339))
		if got != c.want {
			t.Errorf("%s: %s, want %s", name, got, c.want)
		}
	}
}
