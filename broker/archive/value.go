package archive

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/dlq-tools/dlq/broker"
)

// Each header value is written in broker's typed-value encoding,
// {"type": T, "value": V}; see broker.AppendTypedValue and FormatHelp.

// typedValue is one header value with its AMQP type kept beside it.
type typedValue struct{ v any }

func (t typedValue) MarshalJSON() ([]byte, error) {
	return broker.AppendTypedValue(make([]byte, 0, 64), t.v)
}

func (t *typedValue) UnmarshalJSON(b []byte) error {
	v, err := broker.DecodeTypedValue(b)
	if err != nil {
		return err
	}
	t.v = v
	return nil
}

// headerMap is the "headers" object; errors name the header.
type headerMap map[string]typedValue

func (h headerMap) MarshalJSON() ([]byte, error) {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	buf := append(make([]byte, 0, 64*len(keys)+2), '{')
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		ks, _ := json.Marshal(broker.EncodeName(k))
		buf = append(buf, ks...)
		buf = append(buf, ':')
		var err error
		if buf, err = broker.AppendTypedValue(buf, h[k].v); err != nil {
			return nil, fmt.Errorf("header %q: %w", k, err)
		}
	}
	return append(buf, '}'), nil
}

func (h *headerMap) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var g any
	if err := dec.Decode(&g); err != nil {
		return err
	}
	if g == nil {
		*h = nil
		return nil
	}
	raw, ok := g.(map[string]any)
	if !ok {
		return errors.New(`"headers" is not an object`)
	}
	m := make(headerMap, len(raw))
	for k, r := range raw {
		name, err := broker.DecodeName(k)
		if err != nil {
			return fmt.Errorf("header %w", err)
		}
		v, err := broker.TypedValueFromJSON(r)
		if err != nil {
			return fmt.Errorf("header %q: %w", name, err)
		}
		m[name] = typedValue{v}
	}
	*h = m
	return nil
}
