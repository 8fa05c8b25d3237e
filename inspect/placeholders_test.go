package inspect

import "testing"

// placeholderCount agrees with placeholders on shapes, unknown or unclosed
// placeholders and text around them.
func TestPlaceholderCount(t *testing.T) {
	for _, s := range []string{
		"", "no placeholders", "Customer <id> not found", "<num><num> <uuid>", "<x> <num",
		"a <<num>> b", "<str> at <time> from <ip> by <email>: <hex> <*>", "<> <num>", "<num> <unknown> <id>",
	} {
		if got, want := placeholderCount([]byte(s)), len(placeholders(s)); got != want {
			t.Errorf("placeholderCount(%q) = %d, want %d", s, got, want)
		}
	}
}

func FuzzPlaceholderCount(f *testing.F) {
	f.Add("Customer <id> not found <num>")
	f.Add("<<num>")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := placeholderCount([]byte(s)), len(placeholders(s)); got != want {
			t.Errorf("placeholderCount(%q) = %d, want %d", s, got, want)
		}
	})
}

// mayBeEnvelope finds each envelope's key, and answers no only for bodies
// that have none of them and no escape.
func TestMayBeEnvelope(t *testing.T) {
	for body, want := range map[string]bool{
		`{"order_id":"ord-1","note":"xxxx"}`:                   false,
		`{"messageType":["urn:message:A"],"message":{}}`:       true,
		`{"Headers":{},"Body":"e30="}`:                         true,
		`{"version":"1.0","requestContext":{}}`:                true,
		`{"Type":"Notification","TopicArn":"t","Message":""}`:  true,
		`{"a":"\u0054opicArn"}`:                                true,
		`{"note":"messageType"}`:                               true,
		`{"messageTyp":1,"Header":2,"TopicAr":3}`:              false,
		`{"queue_name":"q","actor_name":"a","message_id":"m"}`: true,
		`{"displayName":"App\\Jobs\\X","job":"h","data":{}}`:   true,
		`{"actor":"a","display":"d","amount":1}`:               false,
		`[1,2,"`:                                               false,
		``:                                                     false,
	} {
		if got := mayBeEnvelope([]byte(body)); got != want {
			t.Errorf("mayBeEnvelope(%s) = %v, want %v", body, got, want)
		}
	}
}

// stats counts the placeholders of every message's shape: it allocates
// nothing.
func TestPlaceholderCountAllocates(t *testing.T) {
	b := []byte("Customer <id> not found at <time> from <ip> <num> <x>")
	if n := testing.AllocsPerRun(100, func() { _ = placeholderCount(b) }); n != 0 {
		t.Errorf("placeholderCount allocates %v times a call, want 0", n)
	}
}
