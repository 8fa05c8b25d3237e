package cmd

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestShowOneMessageInFull(t *testing.T) {
	stdout, stderr, code := runDLQ(t, "--broker", "demo:", "peek", "orders.dlq", "--limit", "1", "-o", "json")
	var docs []map[string]any
	if code != ExitOK || json.Unmarshal([]byte(stdout), &docs) != nil || len(docs) != 1 {
		t.Fatalf("peek: exit %d %s", code, stderr)
	}
	id := docs[0]["id"].(string)
	stdout, stderr, code = runDLQ(t, "--broker", "demo:", "show", "orders.dlq", id)
	if code != ExitOK {
		t.Fatalf("show: exit %d %s", code, stderr)
	}
	for _, want := range []string{"id:          " + id, "\nheaders:\n", "  x-exception-message: ", "\ndeath history (newest first):\n  rejected in orders.q", "\nbody (json):\n{\n", `"order_id": `} {
		if !strings.Contains(stdout, want) {
			t.Errorf("show output lacks %q", want)
		}
	}
	stdout, _, code = runDLQ(t, "--broker", "demo:", "show", "orders.dlq", id, "-o", "json")
	var doc map[string]any
	if code != ExitOK || json.Unmarshal([]byte(stdout), &doc) != nil || doc["id"] != id {
		t.Errorf("show -o json: exit %d, id %v", code, doc["id"])
	}
	_, stderr, code = runDLQ(t, "--broker", "demo:", "show", "orders.dlq", "no-such-id")
	if code != ExitError || !strings.Contains(stderr, "no message with ID `no-such-id` among 150 read") {
		t.Errorf("unknown ID: exit %d %s", code, stderr)
	}
}

// A queue that does not exist is named with the nearest queue names.
func TestQueueNotFoundSuggests(t *testing.T) {
	for _, args := range [][]string{
		{"peek", "ordrs.dlq"},
		{"stats", "ordrs.dlq"},
		{"show", "ordrs.dlq", "x"},
	} {
		_, stderr, code := runDLQ(t, append([]string{"--broker", "demo:"}, args...)...)
		if code != ExitError || !strings.Contains(stderr, "did you mean `orders.dlq`?") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
	_, stderr, _ := runDLQ(t, "--broker", "demo:", "peek", "zzzz")
	if strings.Contains(stderr, "did you mean") {
		t.Errorf("nothing near zzzz, yet: %q", stderr)
	}
}
