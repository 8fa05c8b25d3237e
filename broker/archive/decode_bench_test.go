package archive

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkDecodeLine decodes one line shaped like those of
// scripts/bench/inspectgen (a 1 KiB JSON body with escaped quotes, a
// header, properties and a death record), lent and given.
func BenchmarkDecodeLine(b *testing.B) {
	body := `{"order_id":"ord-1","customer":{"id":"c-11713","tier":"t0"},"amount":499.44,"error":{"code":400,"message":"validation failed: amount"},"note":"` + strings.Repeat("x", 880) + `"}`
	line := fmt.Sprintf(`{"id":"msg-00000001","system":"rabbitmq","queue":"bench.dlq","archived":"2026-11-22T00:01:11.543246571Z","body":%q,"headers":{"tenant":{"type":"string","value":"t15"}},"properties":{"content_type":"application/json","delivery_mode":2,"message_id":"msg-00000001","timestamp":"2026-11-17T16:27:30Z"},"death":{"reason":"expired","queue":"payments","exchange":"payments.x","routing_keys":["payments.created"],"count":1,"first":"2026-11-17T16:27:31Z","last":"2026-11-17T16:27:31Z"}}`, body)
	raw := []byte(line)
	b.Run("lent", func(b *testing.B) {
		l := &lend{intern: newInterner()}
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if !fastRecordLent(raw, &l.rec, l) {
				b.Fatal("not decoded")
			}
		}
	})
	b.Run("given", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		for b.Loop() {
			var r record
			if !fastRecord(raw, &r) {
				b.Fatal("not decoded")
			}
		}
	})
}

// BenchmarkDecodeHeaders decodes a line whose headers hold RabbitMQ's usual
// dead-letter metadata (an x-death array of tables) and one of every
// scalar type, lent.
func BenchmarkDecodeHeaders(b *testing.B) {
	line := `{"id":"msg-00000001","system":"rabbitmq","queue":"bench.dlq","body":"{}","headers":{` +
		`"x-death":{"type":"array","value":[{"type":"table","value":{"count":{"type":"int64","value":1},"exchange":{"type":"string","value":"orders.x"},"queue":{"type":"string","value":"orders.q"},"reason":{"type":"string","value":"rejected"},"routing-keys":{"type":"array","value":[{"type":"string","value":"order.created"}]},"time":{"type":"timestamp","value":"2026-11-17T16:27:31Z"}}}]},` +
		`"x-first-death-reason":{"type":"string","value":"rejected"},"b":{"type":"bool","value":true},"i8":{"type":"int8","value":-5},"u64":{"type":"uint64","value":18446744073709551615},` +
		`"f":{"type":"float64","value":0.25},"nan":{"type":"float32","value":"NaN"},"dec":{"type":"decimal","value":{"scale":2,"value":-105}},"raw":{"type":"bytes","value":"AAEC"},"v":{"type":"void"}}}`
	raw := []byte(line)
	l := &lend{intern: newInterner()}
	if !fastRecordLent(raw, &l.rec, l) {
		b.Fatal("not decoded")
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if !fastRecordLent(raw, &l.rec, l) {
			b.Fatal("not decoded")
		}
	}
}
