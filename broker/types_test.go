package broker

import (
	"errors"
	"reflect"
	"strings"
	"testing"
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
			t.Errorf("ParseDestination(%q) = %+v, %v; want %+v", in, got, err, want)
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
