package topology

import (
	"strings"
	"testing"
)

const ladderSpec = `version: 1
rabbitmq:
  defaults:
    queue_type: classic
  retry_ladders:
    - name: order
      main:
        routing_keys: [%s]%s
      tiers:
        - delay: 15s
`

func ladderModel(t *testing.T, keys, ret string) *Model {
	t.Helper()
	if ret != "" {
		ret = "\n        return_routing_key: " + ret
	}
	m, err := LoadBytes("spec.yaml", []byte(strings.NewReplacer("[%s]", "["+keys+"]", "%s", ret).Replace(ladderSpec)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A ladder bound with a pattern returns retried messages with a concrete
// key the pattern matches, not the pattern.
func TestLadderDefaultReturnKeyIsConcrete(t *testing.T) {
	for pattern, want := range map[string]string{`"order.#"`: "order", `"*.created"`: "retry.created", `"#"`: "order", "order.created": "order.created"} {
		m := ladderModel(t, pattern, "")
		if got := m.Rabbit.Ladders[0].ReturnRoutingKey; got != want {
			t.Errorf("routing_keys [%s]: return key %q, want %q", pattern, got, want)
		}
		for _, f := range Lint(m) {
			if f.Rule == "wildcard-routing-key" {
				t.Errorf("routing_keys [%s]: the default was linted: %s", pattern, f.Message)
			}
		}
	}
}

// A wildcard written as a routing key is caught.
func TestLintWildcardRoutingKey(t *testing.T) {
	m := ladderModel(t, `"order.#"`, `"order.#"`)
	var msgs []string
	for _, f := range Lint(m) {
		if f.Rule == "wildcard-routing-key" {
			msgs = append(msgs, f.Message)
		}
	}
	if len(msgs) != 1 || !strings.Contains(msgs[0], "`return_routing_key` `order.#` is a binding pattern") || !strings.Contains(msgs[0], "such as `order`") {
		t.Errorf("wildcard-routing-key findings: %q", msgs)
	}
}
