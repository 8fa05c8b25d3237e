package archive

import (
	"encoding/base64"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dlq-tools/dlq/broker"
)

// fastRecord decodes a record line the way encoding/json would, several
// times faster. It understands only lines as this package writes them:
// known keys in lower case, each once, no nulls, valid UTF-8. On anything
// else it returns false and the caller decodes the line with encoding/json,
// so results and error messages never differ (FuzzFastRecord checks this).
func fastRecord(b []byte, r *record) bool {
	p := fastParser{b: b}
	ok := p.record(r)
	if !ok {
		return false
	}
	p.ws()
	return p.i == len(p.b)
}

type fastParser struct {
	b []byte
	i int
	// scratch holds strings with escapes while they are decoded.
	scratch []byte
	// lend, when set, is memory reused from line to line (lent messages).
	lend *lend
	// id is the record's ID once decoded.
	id string
	// meta skips (while checking the JSON) what queue listings do not need.
	meta bool
}

// fastRecordLent is fastRecord for lent messages: the record's maps,
// structs and body live in l and are overwritten by the next line decoded
// with it.
func fastRecordLent(b []byte, r *record, l *lend) bool {
	l.reset()
	p := fastParser{b: b, lend: l}
	if !p.record(r) {
		return false
	}
	p.ws()
	return p.i == len(p.b)
}

// fastMeta is fastRecord for queue listings: headers, properties and
// attributes are checked as JSON and skipped.
func fastMeta(b []byte, r *record) bool {
	p := fastParser{b: b, meta: true}
	if !p.record(r) {
		return false
	}
	p.ws()
	return p.i == len(p.b)
}

// skip passes over one JSON value, checking its grammar as encoding/json
// would (invalid UTF-8 inside strings is accepted, as encoding/json does).
func (p *fastParser) skip(depth int) bool {
	if depth > 10000 {
		return false
	}
	switch p.peek() {
	case '{':
		return p.object(func([]byte) bool { return p.skip(depth + 1) })
	case '[':
		p.i++
		if p.eat(']') {
			return true
		}
		for {
			if !p.skip(depth + 1) {
				return false
			}
			if p.eat(',') {
				continue
			}
			return p.eat(']')
		}
	case '"':
		j := p.i + 1
		for j < len(p.b) {
			k, _ := stringStop(p.b[j:])
			j += k
			if j >= len(p.b) {
				return false
			}
			c := p.b[j]
			switch {
			case c == '"':
				p.i = j + 1
				return true
			case c < 0x20:
				return false
			}
			// A backslash.
			if j+1 >= len(p.b) {
				return false
			}
			switch p.b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if _, ok := hex4(p.b, j+2); !ok {
					return false
				}
				j += 6
			default:
				return false
			}
		}
		return false
	case 't', 'f':
		_, ok := p.boolean()
		return ok
	case 'n':
		if len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "null" {
			p.i += 4
			return true
		}
		return false
	}
	_, ok := p.number()
	return ok
}

func (p *fastParser) ws() {
	// dlq writes compact JSON: the usual answer is one comparison away.
	if p.i < len(p.b) && p.b[p.i] > ' ' {
		return
	}
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *fastParser) eat(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *fastParser) peek() byte {
	p.ws()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// object calls field for each key of an object; field returns false to
// give up.
func (p *fastParser) object(field func(key []byte) bool) bool {
	if !p.eat('{') {
		return false
	}
	if p.eat('}') {
		return true
	}
	for {
		p.ws()
		key, ok := p.rawString()
		if !ok || !p.eat(':') {
			return false
		}
		if !field(key) {
			return false
		}
		if p.eat(',') {
			continue
		}
		return p.eat('}')
	}
}

// fields is object for a record of known fields, where a key that comes
// twice gives up.
func (p *fastParser) fields(field func(key []byte) bool) bool {
	var s keySet
	return p.object(func(key []byte) bool { return s.add(key) && field(key) })
}

// rawString returns the bytes of a string without escapes (keys), or fails.
func (p *fastParser) rawString() ([]byte, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		c := p.b[j]
		switch {
		case c == '"':
			p.i = j + 1
			return p.b[start:j], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
	}
	return nil, false
}

// str decodes a JSON string.
func (p *fastParser) str() (string, bool) {
	s, plain, ok := p.plainString()
	if !ok {
		return "", false
	}
	if plain {
		return p.string(s), true
	}
	out, ok := p.appendStr(p.scratch[:0])
	p.scratch = out[:0]
	if !ok {
		return "", false
	}
	return p.string(out), true
}

// plainString reads the string at p.i when it has no escapes (the fast
// lane: the string is its bytes) and moves past it; plain is false, and p.i
// stays, when the string has escapes to decode. ok is false when there is
// no string or its bytes are not UTF-8.
func (p *fastParser) plainString() (s []byte, plain, ok bool) {
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false, false
	}
	start := p.i + 1
	k, high := stringStop(p.b[start:])
	end := start + k
	if end >= len(p.b) || p.b[end] != '"' {
		return nil, false, true
	}
	s = p.b[start:end]
	if high && !utf8.Valid(s) {
		return nil, false, false
	}
	p.i = end + 1
	return s, true, true
}

// string makes b a string: an interned one when lending (queue names,
// reasons and header names repeat from message to message).
func (p *fastParser) string(b []byte) string {
	if p.lend != nil && p.lend.intern != nil {
		return p.lend.intern.get(b)
	}
	return string(b)
}

// sameAs decodes a string that is often prev (a message ID equal to the
// record's ID): prev itself then, without allocating.
func (p *fastParser) sameAs(prev string) (string, bool) {
	p.ws()
	if prev != "" && p.i < len(p.b) && p.b[p.i] == '"' {
		start := p.i + 1
		k, _ := stringStop(p.b[start:])
		if end := start + k; end < len(p.b) && p.b[end] == '"' && string(p.b[start:end]) == prev {
			p.i = end + 1
			return prev, true
		}
	}
	return p.unique()
}

// unique decodes a string that is seldom repeated (IDs): never interned.
func (p *fastParser) unique() (string, bool) {
	l := p.lend
	p.lend = nil
	s, ok := p.str()
	p.lend = l
	return s, ok
}

// text decodes a JSON string into a new byte slice of its own (never nil),
// for bodies: one allocation, one copy.
func (p *fastParser) text() ([]byte, bool) {
	s, plain, ok := p.plainString()
	if !ok {
		return nil, false
	}
	if plain {
		if l := p.lend; l != nil {
			return l.bytes(s), true
		}
		return append(make([]byte, 0, len(s)), s...), true
	}
	if l := p.lend; l != nil {
		from := len(l.arena)
		out, ok := p.appendStr(l.arena)
		if !ok {
			return nil, false
		}
		l.arena = out
		return out[from:len(out):len(out)], true
	}
	// With escapes the text is shorter than the rest of the line.
	out, ok := p.appendStr(make([]byte, 0, len(p.b)-p.i))
	if !ok {
		return nil, false
	}
	return out[:len(out):len(out)], true
}

// appendStr appends the decoded JSON string at p.i to out. It copies the
// runs between escapes whole.
func (p *fastParser) appendStr(out []byte) ([]byte, bool) {
	from := len(out)
	j := p.i + 1
	high := false
	for {
		k, h := stringStop(p.b[j:])
		high = high || h
		out = append(out, p.b[j:j+k]...)
		j += k
		if j >= len(p.b) {
			return out, false
		}
		c := p.b[j]
		switch {
		case c == '"':
			if high && !utf8.Valid(out[from:]) {
				return out, false
			}
			p.i = j + 1
			return out, true
		case c < 0x20:
			return out, false
		}
		// A backslash.
		if j+1 >= len(p.b) {
			return out, false
		}
		e := p.b[j+1]
		j += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r1, ok := hex4(p.b, j)
			if !ok {
				return out, false
			}
			j += 4
			if utf16.IsSurrogate(r1) {
				if j+6 > len(p.b) || p.b[j] != '\\' || p.b[j+1] != 'u' {
					return out, false
				}
				r2, ok := hex4(p.b, j+2)
				if !ok {
					return out, false
				}
				r := utf16.DecodeRune(r1, r2)
				if r == utf8.RuneError {
					return out, false
				}
				r1 = r
				j += 6
			}
			out = utf8.AppendRune(out, r1)
		default:
			return out, false
		}
	}
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// number returns the literal of a JSON number, checked against the grammar.
// The bytes are the line's own: convert them before the next call.
func (p *fastParser) number() ([]byte, bool) {
	p.ws()
	b, i := p.b, p.i
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = skipDigits(b, i)
	default:
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		d := i + 1
		if i = skipDigits(b, d); i == d {
			return nil, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		if i = skipDigits(b, d); i == d {
			return nil, false
		}
	}
	p.i = i
	return b[start:i], true
}

// skipDigits returns the index of the first byte from i on that is not an
// ASCII digit.
func skipDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

func (p *fastParser) int64v() (int64, bool) {
	s, ok := p.number()
	if !ok {
		return 0, false
	}
	return broker.ParseIntBytes(s, 64)
}

func (p *fastParser) boolean() (bool, bool) {
	p.ws()
	switch {
	case len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "true":
		p.i += 4
		return true, true
	case len(p.b)-p.i >= 5 && string(p.b[p.i:p.i+5]) == "false":
		p.i += 5
		return false, true
	}
	return false, false
}

// timeValue decodes a time exactly as time.Time.UnmarshalJSON does.
func (p *fastParser) timeValue() (time.Time, bool) {
	p.ws()
	start := p.i
	if t, n, ok := utcTime(p.b[start:]); ok {
		p.i += n
		return t, true
	}
	if start < len(p.b) && p.b[start] == '"' {
		// Plain ASCII without escapes, as archives hold times: parse in
		// place, allocating nothing.
		k, high := stringStop(p.b[start+1:])
		if end := start + 1 + k; !high && end < len(p.b) && p.b[end] == '"' {
			var t time.Time
			if err := t.UnmarshalJSON(p.b[start : end+1]); err != nil {
				return time.Time{}, false
			}
			p.i = end + 1
			return t, true
		}
	}
	if _, ok := p.str(); !ok {
		return time.Time{}, false
	}
	var t time.Time
	if err := t.UnmarshalJSON(p.b[start:p.i]); err != nil {
		return time.Time{}, false
	}
	return t, true
}

// utcTime reads a quoted time in the one shape dlq writes,
// "2006-01-02T15:04:05.999999999Z" (zero to nine fractional digits, UTC),
// with the checks and result of time.Time.UnmarshalJSON, and how many bytes
// it took. Any other text is not ok (the caller then uses UnmarshalJSON).
func utcTime(b []byte) (time.Time, int, bool) {
	const n = len(`"2006-01-02T15:04:05Z"`)
	if len(b) < n || b[0] != '"' || b[5] != '-' || b[8] != '-' || b[11] != 'T' || b[14] != ':' || b[17] != ':' {
		return time.Time{}, 0, false
	}
	ok := true
	num := func(s []byte, lo, hi int) int {
		x := 0
		for _, c := range s {
			if c < '0' || c > '9' {
				ok = false
			}
			x = x*10 + int(c-'0')
		}
		if x < lo || x > hi {
			ok = false
		}
		return x
	}
	year := num(b[1:5], 0, 9999)
	month := num(b[6:8], 1, 12)
	if !ok {
		return time.Time{}, 0, false
	}
	day := num(b[9:11], 1, daysIn(time.Month(month), year))
	hour := num(b[12:14], 0, 23)
	minute := num(b[15:17], 0, 59)
	sec := num(b[18:20], 0, 59)
	i, nsec := 20, 0
	if b[i] == '.' {
		i++
		digits := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' && digits < 9 {
			nsec = nsec*10 + int(b[i]-'0')
			i++
			digits++
		}
		if digits == 0 {
			return time.Time{}, 0, false
		}
		for ; digits < 9; digits++ {
			nsec *= 10
		}
	}
	if !ok || i+1 >= len(b) || b[i] != 'Z' || b[i+1] != '"' {
		return time.Time{}, 0, false
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), i + 2, true
}

func daysIn(m time.Month, year int) int {
	switch m {
	case time.February:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}

func (p *fastParser) strings() ([]string, bool) {
	if !p.eat('[') {
		return nil, false
	}
	if l := p.lend; l != nil {
		// Appended to the slot's shared list; the result keeps its own
		// length and capacity.
		from := len(l.strs)
		if !p.eat(']') {
			for {
				s, ok := p.str()
				if !ok {
					return nil, false
				}
				l.strs = append(l.strs, s)
				if p.eat(',') {
					continue
				}
				if !p.eat(']') {
					return nil, false
				}
				break
			}
		}
		return l.strs[from:len(l.strs):len(l.strs)], true
	}
	out := []string{}
	if p.eat(']') {
		return out, true
	}
	for {
		s, ok := p.str()
		if !ok {
			return nil, false
		}
		out = append(out, s)
		if p.eat(',') {
			continue
		}
		return out, p.eat(']')
	}
}

// keySet guards against a key given twice in one object (encoding/json
// keeps the last; this decoder gives up instead). A key is one bit chosen
// from its length and its first and last bytes: the known keys of each
// object have distinct bits (TestKeyBits), and other keys make the decoder
// give up anyway, so a clash can only send a line to encoding/json.
type keySet uint64

func (s *keySet) add(key []byte) bool {
	if len(key) == 0 {
		return false
	}
	bit := keySet(1) << keyBit(key)
	if *s&bit != 0 {
		return false
	}
	*s |= bit
	return true
}

func keyBit(key []byte) uint {
	return (uint(len(key)) + uint(key[0]) + uint(key[len(key)-1])*10) & 63
}

func (p *fastParser) record(r *record) bool {
	return p.fields(func(key []byte) (ok bool) {
		switch string(key) {
		case "id":
			r.ID, ok = p.unique()
			p.id = r.ID
		case "system":
			var v string
			v, ok = p.str()
			r.System = broker.System(v)
		case "queue":
			r.Queue, ok = p.str()
		case "broker":
			r.Broker, ok = p.str()
		case "archived":
			r.Archived.Time, ok = p.timeValue()
		case "body":
			r.text, ok = p.text()
		case "body_encoding":
			r.BodyEncoding, ok = p.str()
		case "headers":
			if p.meta {
				ok = p.skip(0)
				break
			}
			r.headerValues, ok = p.headers()
		case "properties":
			if p.meta {
				ok = p.skip(0)
				break
			}
			if l := p.lend; l != nil {
				l.props = properties{}
				r.Properties = &l.props
			} else {
				r.Properties = &properties{}
			}
			ok = p.properties(r.Properties)
		case "attributes":
			if p.meta {
				ok = p.skip(0)
				break
			}
			r.Attributes, ok = p.attributes()
		case "system_attributes":
			if p.meta {
				ok = p.skip(0)
				break
			}
			if l := p.lend; l != nil {
				r.SystemAttributes = l.sysAttrs
			} else {
				r.SystemAttributes = map[string]string{}
			}
			ok = p.object(func(k []byte) bool {
				if _, dup := r.SystemAttributes[string(k)]; dup {
					return false
				}
				v, ok := p.str()
				r.SystemAttributes[string(k)] = v
				return ok
			})
		case "exchange":
			r.Exchange, ok = p.str()
		case "routing_key":
			r.RoutingKey, ok = p.str()
		case "death":
			if l := p.lend; l != nil {
				l.death = death{}
				r.Death = &l.death
			} else {
				r.Death = &death{}
			}
			ok = p.death(r.Death)
		case "delivery_count":
			r.DeliveryCount, ok = p.int64v()
		case "acquisitions":
			r.AcquiredCount, ok = p.int64v()
		case "redelivered":
			r.Redelivered, ok = p.boolean()
		case "timestamp":
			r.Timestamp.Time, ok = p.timeValue()
		case "position":
			r.Position, ok = p.unique()
		case "unreadable":
			r.Unreadable, ok = p.str()
		}
		return ok
	})
}

func (p *fastParser) uint8v() (uint8, bool) {
	s, ok := p.number()
	if !ok {
		return 0, false
	}
	n, ok := broker.ParseUintBytes(s, 8)
	return uint8(n), ok
}

func (p *fastParser) properties(pr *properties) bool {
	return p.fields(func(key []byte) (ok bool) {
		switch string(key) {
		case "content_type":
			pr.ContentType, ok = p.str()
		case "content_encoding":
			pr.ContentEncoding, ok = p.str()
		case "delivery_mode":
			pr.DeliveryMode, ok = p.uint8v()
		case "priority":
			pr.Priority, ok = p.uint8v()
		case "correlation_id":
			pr.CorrelationID, ok = p.unique()
		case "reply_to":
			pr.ReplyTo, ok = p.str()
		case "expiration":
			pr.Expiration, ok = p.str()
		case "message_id":
			pr.MessageID, ok = p.sameAs(p.id)
		case "timestamp":
			pr.Timestamp, ok = p.timeValue()
		case "type":
			pr.Type, ok = p.str()
		case "user_id":
			pr.UserID, ok = p.str()
		case "app_id":
			pr.AppID, ok = p.str()
		}
		return ok
	})
}

func (p *fastParser) attributes() (map[string]attribute, bool) {
	var lent map[string]attribute
	if p.lend != nil {
		lent = p.lend.attrs
	}
	return objectInto(p, lent, func() (attribute, bool) {
		var a attribute
		ok := p.fields(func(key []byte) (ok bool) {
			switch string(key) {
			case "data_type":
				a.DataType, ok = p.str()
			case "string_value":
				var v string
				v, ok = p.str()
				a.StringValue = &v
			case "binary_value":
				var v string
				if v, ok = p.str(); ok {
					b := make([]byte, base64.StdEncoding.DecodedLen(len(v)))
					n, err := base64.StdEncoding.Decode(b, []byte(v))
					a.BinaryValue, ok = b[:n], err == nil
				}
			}
			return ok
		})
		return a, ok
	})
}

func (p *fastParser) deathEntry(e *deathEntry) bool {
	return p.fields(func(key []byte) (ok bool) {
		switch string(key) {
		case "reason":
			e.Reason, ok = p.str()
		case "queue":
			e.Queue, ok = p.str()
		case "exchange":
			e.Exchange, ok = p.str()
		case "routing_keys":
			e.RoutingKeys, ok = p.strings()
		case "count":
			e.Count, ok = p.int64v()
		case "time":
			e.Time.Time, ok = p.timeValue()
		}
		return ok
	})
}

func (p *fastParser) death(d *death) bool {
	return p.fields(func(key []byte) (ok bool) {
		switch string(key) {
		case "reason":
			d.Reason, ok = p.str()
		case "queue":
			d.Queue, ok = p.str()
		case "queue_arn":
			d.QueueARN, ok = p.str()
		case "exchange":
			d.Exchange, ok = p.str()
		case "routing_keys":
			d.RoutingKeys, ok = p.strings()
		case "count":
			d.Count, ok = p.int64v()
		case "first":
			d.First.Time, ok = p.timeValue()
		case "last":
			d.Last.Time, ok = p.timeValue()
		case "first_reason":
			d.FirstReason, ok = p.str()
		case "first_queue":
			d.FirstQueue, ok = p.str()
		case "history":
			if !p.eat('[') {
				return false
			}
			if l := p.lend; l != nil {
				d.History = l.history
			} else {
				d.History = []deathEntry{}
			}
			if p.eat(']') {
				return true
			}
			for {
				var e deathEntry
				if !p.deathEntry(&e) {
					return false
				}
				d.History = append(d.History, e)
				if p.eat(',') {
					continue
				}
				return p.eat(']')
			}
		}
		return ok
	})
}

// headers decodes the headers straight into the map the message will hold.
func (p *fastParser) headers() (map[string]any, bool) {
	var lent map[string]any
	if p.lend != nil {
		lent = p.lend.mHeaders
	}
	return objectInto(p, lent, func() (any, bool) { return p.typed(0) })
}

// objectInto decodes an object whose values value decodes into out (a new
// map when out is nil), refusing a name that comes twice.
func objectInto[V any](p *fastParser, out map[string]V, value func() (V, bool)) (map[string]V, bool) {
	if out == nil {
		out = map[string]V{}
	}
	ok := p.object(func(name []byte) bool {
		if _, dup := out[string(name)]; dup {
			return false
		}
		v, ok := value()
		out[p.string(name)] = v
		return ok
	})
	return out, ok
}

// typed decodes {"type":T,"value":V} with "type" first, as
// broker.AppendTypedValue writes it; the values themselves are converted by
// broker's typed-value codec.
func (p *fastParser) typed(depth int) (any, bool) {
	if depth > broker.MaxTypedDepth || !p.eat('{') {
		return nil, false
	}
	p.ws()
	key, ok := p.rawString()
	if !ok || string(key) != "type" || !p.eat(':') {
		return nil, false
	}
	p.ws()
	typ, ok := p.rawString()
	if !ok {
		return nil, false
	}
	if string(typ) == broker.TypedVoid {
		return nil, p.eat('}')
	}
	if !p.eat(',') {
		return nil, false
	}
	p.ws()
	key, ok = p.rawString()
	if !ok || string(key) != "value" || !p.eat(':') {
		return nil, false
	}
	v, ok := p.typedValue(typ, depth)
	if !ok || !p.eat('}') {
		return nil, false
	}
	return v, true
}

// typedValue decodes the value of a typed value of type typ. Strings that
// need an "encoding" after the value are left to the caller's fallback.
func (p *fastParser) typedValue(typ []byte, depth int) (any, bool) {
	switch p.peek() {
	case '"':
		if string(typ) == broker.TypedString {
			if l := p.lend; l != nil && l.intern != nil {
				// Plain strings come boxed from the intern table.
				start := p.i + 1
				k, high := stringStop(p.b[start:])
				if end := start + k; !high && end < len(p.b) && p.b[end] == '"' {
					p.i = end + 1
					return l.intern.boxed(p.b[start:end]), true
				}
			}
			return p.str()
		}
		s, ok := p.str()
		if !ok {
			return nil, false
		}
		v, err := broker.TypedFromString(typ, s)
		return v, err == nil
	case 't', 'f':
		b, ok := p.boolean()
		if !ok {
			return nil, false
		}
		v, err := broker.TypedFromBool(typ, b)
		return v, err == nil
	case '{':
		switch string(typ) {
		case broker.TypedDecimal:
			var scale, value []byte
			ok := p.object(func(key []byte) bool {
				var dst *[]byte
				switch string(key) {
				case "scale":
					dst = &scale
				case "value":
					dst = &value
				default:
					return false
				}
				if *dst != nil {
					return false
				}
				var ok bool
				*dst, ok = p.number()
				return ok
			})
			if !ok || scale == nil || value == nil {
				return nil, false
			}
			d, err := broker.TypedFromDecimal(scale, value)
			return d, err == nil
		case broker.TypedTable:
			var m map[string]any
			if l := p.lend; l != nil {
				m = l.table()
			} else {
				m = map[string]any{}
			}
			ok := p.object(func(k []byte) bool {
				if _, dup := m[string(k)]; dup {
					return false
				}
				v, ok := p.typed(depth + 1)
				m[p.string(k)] = v
				return ok
			})
			return m, ok
		}
		return nil, false
	case '[':
		if string(typ) != broker.TypedArray {
			return nil, false
		}
		p.i++
		a, keep := []any{}, func([]any) {}
		if l := p.lend; l != nil {
			a, keep = l.array()
		}
		if p.eat(']') {
			return a, true
		}
		for {
			v, ok := p.typed(depth + 1)
			if !ok {
				return nil, false
			}
			a = append(a, v)
			if p.eat(',') {
				continue
			}
			keep(a)
			return a, p.eat(']')
		}
	}
	lit, ok := p.number()
	if !ok {
		return nil, false
	}
	v, err := broker.TypedFromNumber(typ, lit)
	return v, err == nil
}
