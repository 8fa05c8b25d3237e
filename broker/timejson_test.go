package broker

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

// TestTimeJSON: every time a message can carry (time.Unix of any int64
// seconds, with nanoseconds) is written and read back as the same instant;
// the years 0 to 9999 keep the RFC 3339 form encoding/json writes.
func TestTimeJSON(t *testing.T) {
	for _, tc := range []struct {
		t    time.Time
		want string
	}{
		{time.Unix(0, 0), `"1970-01-01T00:00:00Z"`},
		{time.Unix(-1, 0), `"1969-12-31T23:59:59Z"`},
		{time.Unix(1700000000, 5e8), `"2023-11-14T22:13:20.5Z"`},
		{time.Unix(1<<62, 0), `4611686018427387904`},
		{time.Unix(math.MaxInt64, 0), `9223372036854775807`},
		{time.Unix(math.MinInt64, 0), `-9223372036854775808`},
		{time.Unix(1<<62, 1), `4611686018427387904.000000001`},
		{time.Unix(-1<<62, 25e7), `-4611686018427387903.75`},
		{time.Unix(math.MinInt64+1, 999999999), `-9223372036854775806.000000001`},
		{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), `253402300800`},
		{time.Date(-1, 12, 31, 23, 59, 59, 0, time.UTC), `-62167219201`},
	} {
		got := string(AppendTimeJSON(nil, tc.t))
		if got != tc.want {
			t.Errorf("AppendTimeJSON(%d s %d ns) = %s, want %s", tc.t.Unix(), tc.t.Nanosecond(), got, tc.want)
		}
		if TimeInRFC3339(tc.t) {
			std, err := json.Marshal(tc.t.UTC())
			if err != nil || string(std) != got {
				t.Errorf("encoding/json writes %s (%v), AppendTimeJSON %s", std, err, got)
			}
			continue
		}
		back, err := TimeFromNumber([]byte(got))
		if err != nil || back != tc.t.UTC() {
			t.Errorf("TimeFromNumber(%s) = %d s %d ns, %v; want %d s %d ns", got, back.Unix(), back.Nanosecond(), err, tc.t.Unix(), tc.t.Nanosecond())
		}
	}
	for _, bad := range []string{"", "-", "1.", ".5", "1.0000000001", "9223372036854775808", "-9223372036854775808.5", "1e3", "+1", "0x10", "1.a"} {
		if _, err := TimeFromNumber([]byte(bad)); err == nil {
			t.Errorf("TimeFromNumber(%q) accepted", bad)
		}
	}
}

// FuzzTimeJSON: any int64 seconds and nanoseconds round-trip.
func FuzzTimeJSON(f *testing.F) {
	f.Add(int64(0), int64(0))
	f.Add(int64(1<<62), int64(0))
	f.Add(int64(math.MaxInt64), int64(999999999))
	f.Add(int64(math.MinInt64), int64(1))
	f.Fuzz(func(t *testing.T, sec, ns int64) {
		if ns < 0 || ns >= 1e9 {
			return
		}
		tm := time.Unix(sec, ns).UTC()
		b := AppendTimeJSON(nil, tm)
		var back time.Time
		var err error
		if b[0] == '"' {
			err = back.UnmarshalJSON(b)
			back = back.UTC()
		} else {
			back, err = TimeFromNumber(b)
		}
		if err != nil || back != tm {
			t.Fatalf("%d s %d ns: wrote %s, read %d s %d ns (%v)", sec, ns, b, back.Unix(), back.Nanosecond(), err)
		}
	})
}
