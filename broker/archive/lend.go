package archive

import "github.com/dlq-tools/dlq/broker"

// lend is the memory of one lent message: the message, the record it is
// decoded through, their maps and structs, and its body. Decoding the next
// line into it overwrites all of that, so reading allocates little more
// than the strings of each message (see Broker.PeekReused).
type lend struct {
	msg broker.Message
	rec record

	// Record side.
	props    properties
	death    death
	history  []deathEntry
	strs     []string // routing keys
	attrs    map[string]attribute
	sysAttrs map[string]string
	arena    []byte // the body (and a base64 body decoded)
	// Nested header values (x-death tables and arrays): those handed out
	// for the current line are tables[:nt] and arrays[:na].
	tables []map[string]any
	arrays [][]any
	nt, na int

	// Message side.
	mHeaders map[string]any
	mAttrs   map[string]broker.Attribute
	mDeath   broker.Death
	mHistory []broker.DeathEntry

	// intern is the decoder's string table (set for each line decoded).
	intern *interner
}

// maxLentBody is the largest body buffer a lent message keeps; a larger
// body's buffer is dropped after use so that one huge message does not pin
// its memory for the rest of the read.
const maxLentBody = 1 << 20

// reset readies l for the next line, keeping its memory.
func (l *lend) reset() {
	if l.arena == nil || cap(l.arena) > maxLentBody {
		// Never nil: an empty body is not a missing one.
		l.arena = make([]byte, 0, 2048)
	}
	l.arena = l.arena[:0]
	if cap(l.death.History) > cap(l.history) {
		l.history = l.death.History
	}
	if l.history == nil {
		l.history = make([]deathEntry, 0, 4)
	}
	l.history = l.history[:0]
	if l.strs == nil {
		l.strs = make([]string, 0, 8)
	}
	l.strs = l.strs[:0]
	if l.mHeaders == nil {
		l.mHeaders = map[string]any{}
		l.attrs = map[string]attribute{}
		l.sysAttrs = map[string]string{}
	}
	clear(l.mHeaders)
	if len(l.tables) > maxLentValues {
		l.tables = nil
	}
	if len(l.arrays) > maxLentValues {
		l.arrays = nil
	}
	l.nt, l.na = 0, 0
	clear(l.attrs)
	clear(l.sysAttrs)
	l.rec = record{}
}

// maxLentValues is the most nested tables (and arrays) a lent message
// keeps for reuse.
const maxLentValues = 64

// table returns an empty map for a nested header table.
func (l *lend) table() map[string]any {
	if l.nt == len(l.tables) {
		l.tables = append(l.tables, map[string]any{})
	}
	m := l.tables[l.nt]
	l.nt++
	clear(m)
	return m
}

// array returns an empty (not nil) slice for a nested header array, and a
// function to call with it once filled, so that its grown backing array is
// reused next time.
func (l *lend) array() ([]any, func([]any)) {
	if l.na == len(l.arrays) {
		l.arrays = append(l.arrays, make([]any, 0, 4))
	}
	i := l.na
	l.na++
	return l.arrays[i][:0], func(a []any) { l.arrays[i] = a }
}

// bytes copies s into the body buffer.
func (l *lend) bytes(s []byte) []byte {
	from := len(l.arena)
	l.arena = append(l.arena, s...)
	return l.arena[from:len(l.arena):len(l.arena)]
}

// interner hands out one string for equal byte strings: queue names,
// reasons, header names and values repeat across messages. It keeps each
// string boxed as well, so that a header value costs no allocation either.
// It holds at most maxInterned short strings and starts over when full, so
// its memory is bounded whatever the input.
type interner struct {
	m map[string]any
	// recent is a direct-mapped cache in front of m: most strings are
	// found there with one comparison instead of a hash lookup.
	recent [256]any
}

const (
	maxInterned    = 4096
	maxInternedLen = 64
)

func newInterner() *interner { return &interner{m: make(map[string]any, 256)} }

// get returns b as a string.
func (in *interner) get(b []byte) string {
	return in.boxed(b).(string)
}

// boxed returns b as a string in an interface.
func (in *interner) boxed(b []byte) any {
	if len(b) == 0 {
		return ""
	}
	slot := &in.recent[(uint(len(b))*31+uint(b[0])+uint(b[len(b)-1])*7)&255]
	if v := *slot; v != nil && v.(string) == string(b) {
		return v
	}
	if len(b) > maxInternedLen {
		return string(b)
	}
	v, ok := in.m[string(b)]
	if !ok {
		v = string(b)
		if len(in.m) >= maxInterned {
			clear(in.m)
		}
		in.m[v.(string)] = v
	}
	*slot = v
	return v
}
