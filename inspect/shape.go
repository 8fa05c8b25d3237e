package inspect

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Placeholders of a shape: what a variable part of a failure reason was.
const (
	PhNum   = "<num>"   // a number, with or without a unit (42, -1.5, 10MB, 95%)
	PhUUID  = "<uuid>"  // a UUID
	PhHex   = "<hex>"   // hex digits: 0x1f, a commit or object id
	PhID    = "<id>"    // a word mixing letters and digits (SKU-4821, cus_9944), a long token
	PhTime  = "<time>"  // a timestamp, date, time of day or duration
	PhIP    = "<ip>"    // an IPv4 or IPv6 address
	PhEmail = "<email>" // an email address
	PhStr   = "<str>"   // a quoted value, the value of key=value
	// PhAny is where merged shapes differ (see Mine).
	PhAny = "<*>"
)

// maxShapeValues bounds the values Shape returns (the placeholders after
// it still mask, without values).
const maxShapeValues = 16

// Shape reduces a failure reason to its template: variable parts become
// typed placeholders, words are separated by single spaces. It is a pure
// function of reason; values are the masked parts in order (at most 16),
// each a substring of reason.
func Shape(reason string) (shape string, values []string) {
	var s shaper
	s.shape(reason)
	return string(s.out), s.vals
}

// ShapeOf is Shape without the values.
func ShapeOf(reason string) string {
	var s shaper
	s.shape(reason)
	return string(s.out)
}

// GroupID is the stable ID of a template: the first 10 hex digits of its
// SHA-256, the same on every run, queue and machine.
func GroupID(template string) string {
	sum := sha256.Sum256([]byte(template))
	return hex.EncodeToString(sum[:5])
}

// shaper holds the buffers of one Shape call, reused by Stats.
type shaper struct {
	out  []byte
	vals []string
}

func (s *shaper) reset() {
	s.out = s.out[:0]
	s.vals = s.vals[:0]
}

func (s *shaper) mask(ph, v string) {
	s.out = append(s.out, ph...)
	if len(s.vals) < maxShapeValues {
		s.vals = append(s.vals, v)
	}
}

// The byte classes of the shaper, one table lookup each: every byte of
// every reason is classified several times.
const (
	clSpace uint8 = 1 << iota
	clDelim
	clDigit
	clLetter
	clHex
)

var byteClass = func() (t [256]uint8) {
	for c := range 256 {
		b := byte(c)
		switch b {
		case ' ', '\t', '\n', '\r', '\v', '\f':
			t[c] |= clSpace
		case '(', ')', '[', ']', '{', '}', ',', ';', '=', '"', '\'', '`', '<', '>', '|':
			t[c] |= clDelim
		}
		if b >= '0' && b <= '9' {
			t[c] |= clDigit | clHex
		}
		if b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80 {
			t[c] |= clLetter
		}
		if b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' {
			t[c] |= clHex
		}
	}
	return t
}()

func isSpace(c byte) bool { return byteClass[c]&clSpace != 0 }

// isDelim separates atoms inside a word.
func isDelim(c byte) bool { return byteClass[c]&clDelim != 0 }

func isDigit(c byte) bool    { return c-'0' <= 9 }
func isLetter(c byte) bool   { return byteClass[c]&clLetter != 0 }
func isAlnum(c byte) bool    { return byteClass[c]&(clDigit|clLetter) != 0 }
func isHexDigit(c byte) bool { return byteClass[c]&clHex != 0 }

func (s *shaper) shape(r string) {
	s.reset()
	i := 0
	for i < len(r) {
		for i < len(r) && isSpace(r[i]) {
			i++
		}
		if i >= len(r) {
			break
		}
		if len(s.out) > 0 {
			s.out = append(s.out, ' ')
		}
		j := i
		for j < len(r) && !isSpace(r[j]) {
			j++
		}
		word := r[i:j]
		if isURLish(word) {
			s.url(word)
			i = j
			continue
		}
		// Quotes may span words: find the closing one in the whole text.
		i = s.word(r, i, j)
	}
}

// word writes the atoms of r[i:j] and returns where the next word starts
// (past j when a quoted value runs on).
func (s *shaper) word(r string, i, j int) int {
	afterEq := false
	for i < j {
		c := r[i]
		if (c == '"' || c == '\'') && (i == 0 || !isAlnum(r[i-1])) {
			if k := closingQuote(r, i); k > 0 {
				s.out = append(s.out, c)
				s.mask(PhStr, r[i+1:k])
				s.out = append(s.out, c)
				i = k + 1
				if i > j {
					// The quote ran over spaces: finish its word.
					for j = i; j < len(r) && !isSpace(r[j]); j++ {
					}
				}
				afterEq = false
				continue
			}
		}
		if isDelim(c) {
			s.out = append(s.out, c)
			afterEq = c == '='
			if c == '(' || c == '[' {
				// key=(value): the value stays a value.
				afterEq = afterEq || (len(s.out) > 1 && s.out[len(s.out)-2] == '=')
			}
			i++
			continue
		}
		k := i
		for k < j && !isDelim(r[k]) {
			k++
		}
		s.atom(r[i:k], afterEq)
		afterEq = false
		i = k
	}
	return j
}

// closingQuote finds the quote closing the one at r[i], within 200 bytes,
// followed by no letter or digit; -1 when there is none.
func closingQuote(r string, i int) int {
	q := r[i]
	end := min(len(r), i+200)
	for k := i + 1; k < end; k++ {
		if r[k] == q && (k+1 >= len(r) || !isAlnum(r[k+1])) {
			if k == i+1 {
				return -1 // '' or "": nothing to mask
			}
			return k
		}
	}
	return -1
}

// atom writes one atom: masked when it is variable, else as it is. value is
// true for the value of key=value, which is masked as <str> at least.
func (s *shaper) atom(a string, value bool) {
	// Trailing sentence punctuation stays literal.
	core, tail := a, ""
	for len(core) > 0 {
		c := core[len(core)-1]
		if c == '.' || c == ':' || c == '!' || c == '?' || c == '-' {
			core = core[:len(core)-1]
			continue
		}
		break
	}
	tail = a[len(core):]
	if len(core) > 1 && core[0] == ':' && digitsAt(core, 1) == len(core)-1 {
		// ]:5672 after an IPv6 address
		s.out = append(s.out, ':')
		core = core[1:]
	}
	if core == "" {
		s.out = append(s.out, a...)
		return
	}
	if s.hostPort(core, true) {
	} else if ph := classify(core); ph != "" {
		s.mask(ph, core)
	} else if s.hostPort(core, false) {
	} else if value {
		s.mask(PhStr, core)
	} else {
		s.out = append(s.out, core...)
	}
	s.out = append(s.out, tail...)
}

// hostPort writes host:port as <ip>:<num> (ipOnly) or host:<num>, the
// host masked when it is variable; false when a is no host:port.
func (s *shaper) hostPort(a string, ipOnly bool) bool {
	p, ok := hostPort(a)
	if !ok || ipOnly && !isIP(a[:p]) {
		return false
	}
	host := a[:p]
	if ph := classify(host); ph != "" {
		s.mask(ph, host)
	} else {
		s.out = append(s.out, host...)
	}
	s.out = append(s.out, ':')
	s.mask(PhNum, a[p+1:])
	return true
}

// hostPort finds the colon of host:port (port all digits).
func hostPort(a string) (int, bool) {
	p := strings.LastIndexByte(a, ':')
	if p <= 0 || p == len(a)-1 || len(a)-p-1 > 5 {
		return 0, false
	}
	for k := p + 1; k < len(a); k++ {
		if !isDigit(a[k]) {
			return 0, false
		}
	}
	return p, true
}

func isURLish(w string) bool {
	if strings.Contains(w, "://") {
		return true
	}
	// An absolute path with at least two segments.
	return len(w) > 2 && w[0] == '/' && strings.IndexByte(w[1:], '/') > 0
}

// url writes a URL or path: the scheme and host stay (an IP host is
// masked), path segments and query values that are ids are masked.
// maskOrKeep writes v as its placeholder when it is an id, else as is.
func (s *shaper) maskOrKeep(v string) {
	if ph := classify(v); ph != "" {
		s.mask(ph, v)
	} else {
		s.out = append(s.out, v...)
	}
}

func (s *shaper) url(w string) {
	// Trailing punctuation and closing brackets stay literal.
	end := len(w)
	for end > 0 && strings.IndexByte(".,;:!?)]}'\"", w[end-1]) >= 0 {
		end--
	}
	u, tail := w[:end], w[end:]
	// Leading quotes or brackets.
	start := 0
	for start < len(u) && strings.IndexByte("(['\"<", u[start]) >= 0 {
		start++
	}
	s.out = append(s.out, u[:start]...)
	u = u[start:]
	if k := strings.Index(u, "://"); k >= 0 {
		s.out = append(s.out, u[:k+3]...)
		u = u[k+3:]
		h := strings.IndexAny(u, "/?#")
		if h < 0 {
			h = len(u)
		}
		host := u[:h]
		if at := strings.LastIndexByte(host, '@'); at >= 0 {
			// user:password@ never shows.
			s.out = append(s.out, "<user>@"...)
			host = host[at+1:]
		}
		if s.hostPort(host, true) {
		} else if ph := classify(host); ph != "" {
			s.mask(ph, host)
		} else if p, ok := hostPort(host); ok {
			s.out = append(s.out, host[:p+1]...)
			s.out = append(s.out, host[p+1:]...)
		} else {
			s.out = append(s.out, host...)
		}
		u = u[h:]
	}
	path, query := u, ""
	if q := strings.IndexAny(u, "?#"); q >= 0 {
		path, query = u[:q], u[q:]
	}
	for k := 0; k < len(path); {
		if path[k] == '/' {
			s.out = append(s.out, '/')
			k++
			continue
		}
		e := k
		for e < len(path) && path[e] != '/' {
			e++
		}
		s.maskOrKeep(path[k:e])
		k = e
	}
	for k := 0; k < len(query); {
		c := query[k]
		if c == '?' || c == '&' || c == '#' || c == '=' {
			s.out = append(s.out, c)
			k++
			if c == '=' {
				e := k
				for e < len(query) && query[e] != '&' && query[e] != '#' {
					e++
				}
				s.maskOrKeep(query[k:e])
				k = e
			}
			continue
		}
		e := k
		for e < len(query) && strings.IndexByte("?&#=", query[e]) < 0 {
			e++
		}
		s.out = append(s.out, query[k:e]...)
		k = e
	}
	s.out = append(s.out, tail...)
}
