package broker

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/dlq-tools/dlq/internal/testdiff"
)

func TestParseDestination(t *testing.T) {
	for in, want := range map[string]Destination{
		"":                      {Kind: ToOrigin},
		"origin":                {Kind: ToOrigin},
		"queue:orders":          {Kind: ToQueue, Queue: "orders"},
		"exchange:orders.x":     {Kind: ToExchange, Exchange: "orders.x"},
		"exchange:orders.x:a.b": {Kind: ToExchange, Exchange: "orders.x", RoutingKeys: []string{"a.b"}},
		"exchange:x:a,b":        {Kind: ToExchange, Exchange: "x", RoutingKeys: []string{"a", "b"}},
		"file://out.jsonl":      {Kind: ToFile, Path: "out.jsonl"},
	} {
		got, err := ParseDestination(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseDestination(%q) = %v; (-want +got):\n%s", in, err, testdiff.Diff(want, got))
		}
		if in != "" && got.Kind != ToOrigin && got.String() != in {
			t.Errorf("%q renders as %q", in, got.String())
		}
	}
	for in, msg := range map[string]string{
		"queue:":    "names no queue",
		"file://":   "names no file",
		"somewhere": "not a destination",
	} {
		if _, err := ParseDestination(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseDestination(%q): %v, want %q", in, err, msg)
		}
	}
	if _, err := ParseDestination("somewhere"); !errors.Is(err, ErrNotADestination) {
		t.Errorf("unknown form: %v is not ErrNotADestination", err)
	}
}

func TestInt64(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want int64
		ok   bool
	}{
		{int8(-3), -3, true}, {int32(7), 7, true}, {int64(1) << 40, 1 << 40, true}, {uint32(9), 9, true},
		{float64(12), 12, true}, {1.5, 0, false}, {"3", 0, false}, {uint64(1), 0, false}, {nil, 0, false},
	} {
		if got, ok := Int64(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("Int64(%#v) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
