package inspect

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
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

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// isDelim separates atoms inside a word.
func isDelim(c byte) bool {
	switch c {
	case '(', ')', '[', ']', '{', '}', ',', ';', '=', '"', '\'', '`', '<', '>', '|':
		return true
	}
	return false
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80 }
func isAlnum(c byte) bool  { return isDigit(c) || isLetter(c) }
func isHexDigit(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

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

// classify names the placeholder of a variable atom, "" for a literal.
func classify(a string) string {
	if len(a) == 0 {
		return ""
	}
	digits, letters, upper, lower, seps := 0, 0, 0, 0, 0
	for k := 0; k < len(a); k++ {
		c := a[k]
		switch {
		case isDigit(c):
			digits++
		case c >= 'a' && c <= 'z':
			letters++
			lower++
		case c >= 'A' && c <= 'Z':
			letters++
			upper++
		case c >= 0x80:
			letters++
		case c == '-' || c == '_':
			seps++
		}
	}
	if isEmail(a) {
		return PhEmail
	}
	if digits == 0 {
		return ""
	}
	switch {
	case isUUID(a):
		return PhUUID
	case isTime(a):
		return PhTime
	case isIP(a):
		return PhIP
	case isNumber(a):
		return PhNum
	case isHex(a):
		return PhHex
	}
	if letters == 0 {
		// Digits and punctuation: 12/05, 1.2.3, +1-555-0100.
		return PhNum
	}
	if strings.IndexByte(a, '@') > 0 && !strings.ContainsAny(a, "/:") {
		return PhID // Type@hash
	}
	dotted := strings.IndexByte(a, '.') >= 0
	switch {
	case digits >= 4, dotted:
		return ifThen(digits >= 4 && !dotted, PhID)
	case seps == 1 && isWordDigits(a):
		return ifThen(idSuffix(a), PhID) // SKU-7, cus_0; not UTF-16
	case seps > 0 && digits >= 2:
		return PhID // cus_12, ch_3NfK2a9
	case len(a) >= 8 && digits >= 2 && upper > 0 && lower > 0 && isTokenChars(a):
		return PhID // random tokens: 3NfK2a9x
	}
	return ""
}

// isWordDigits: letters, one - or _, then digits only (SKU-7, cus_0).
func isWordDigits(a string) bool {
	i := strings.IndexAny(a, "-_")
	if i <= 0 || i == len(a)-1 || digitsAt(a, i+1) != len(a)-i-1 {
		return false
	}
	for k := 0; k < i; k++ {
		if !isLetter(a[k]) {
			return false
		}
	}
	return true
}

// idSuffix: a word-digits atom is an id unless its letters name an
// encoding or a version (utf-8, UTF-16, ipv-6, http-2).
func idSuffix(a string) bool {
	i := strings.IndexAny(a, "-_")
	switch strings.ToLower(a[:i]) {
	case "utf", "ucs", "iso", "latin", "cp", "windows", "sha", "md", "base", "http", "tls", "ssl", "ipv", "v", "x":
		return false
	}
	return true
}

func ifThen(c bool, s string) string {
	if c {
		return s
	}
	return ""
}

func isTokenChars(a string) bool {
	for k := 0; k < len(a); k++ {
		c := a[k]
		if !isAlnum(c) && c != '+' && c != '/' && c != '=' && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

func isUUID(a string) bool {
	if len(a) == 38 && a[0] == '{' && a[37] == '}' {
		a = a[1:37]
	}
	if len(a) != 36 {
		return false
	}
	for k := 0; k < 36; k++ {
		switch k {
		case 8, 13, 18, 23:
			if a[k] != '-' {
				return false
			}
		default:
			if !isHexDigit(a[k]) {
				return false
			}
		}
	}
	return true
}

// digitsAt returns how many digits start at a[k:].
func digitsAt(a string, k int) int {
	n := 0
	for k+n < len(a) && isDigit(a[k+n]) {
		n++
	}
	return n
}

// isTime: 2024-01-02[T…], 12:30[:45[.123]][Z], 01/02/2024, durations
// (250ms, 1m30s, 1.5h, PT30S).
func isTime(a string) bool {
	// ISO date, with or without a time.
	if len(a) >= 10 && digitsAt(a, 0) == 4 && a[4] == '-' && digitsAt(a, 5) == 2 && a[7] == '-' && digitsAt(a, 8) == 2 {
		rest := a[10:]
		if rest == "" {
			return true
		}
		if rest[0] == 'T' || rest[0] == 't' || rest[0] == '_' {
			return isClock(rest[1:])
		}
		return false
	}
	if isClock(a) {
		return true
	}
	// 01/02/2024, 2024/01/02, 02.01.2024
	if n := digitsAt(a, 0); n >= 1 && n <= 4 && len(a) > n && (a[n] == '/' || a[n] == '.') {
		sep := a[n]
		m := digitsAt(a, n+1)
		if m >= 1 && m <= 2 && len(a) > n+1+m && a[n+1+m] == sep {
			o := digitsAt(a, n+2+m)
			return o >= 2 && o <= 4 && n+2+m+o == len(a) && (n == 4 || o >= 2)
		}
	}
	return isDuration(a)
}

// isClock: 12:30, 12:30:45, 12:30:45.123, each with an optional zone
// (Z, +01:00, +0100).
func isClock(a string) bool {
	h := digitsAt(a, 0)
	if h < 1 || h > 2 || len(a) < h+3 || a[h] != ':' || digitsAt(a, h+1) != 2 {
		return false
	}
	k := h + 3
	if k < len(a) && a[k] == ':' {
		if digitsAt(a, k+1) != 2 {
			return false
		}
		k += 3
		if k < len(a) && (a[k] == '.' || a[k] == ',') {
			n := digitsAt(a, k+1)
			if n == 0 {
				return false
			}
			k += 1 + n
		}
	}
	rest := a[k:]
	switch {
	case rest == "", rest == "Z", rest == "z":
		return true
	case rest[0] == '+' || rest[0] == '-':
		z := rest[1:]
		return len(z) == 4 && digitsAt(z, 0) == 4 || len(z) == 5 && digitsAt(z, 0) == 2 && z[2] == ':' && digitsAt(z, 3) == 2 || len(z) == 2 && digitsAt(z, 0) == 2
	}
	return false
}

// isDuration: one or more number+unit pairs (1h30m, 250ms, 1.5s, 30sec), or
// ISO 8601 (PT30S).
func isDuration(a string) bool {
	if len(a) > 2 && (a[0] == 'P' || a[0] == 'p') {
		b := a[1:]
		if b[0] == 'T' || b[0] == 't' {
			b = b[1:]
		}
		if b == "" {
			return false
		}
		for k := 0; k < len(b); {
			n := digitsAt(b, k)
			if n == 0 || k+n >= len(b) || strings.IndexByte("YMWDHSymwdhs", b[k+n]) < 0 {
				return false
			}
			k += n + 1
		}
		return true
	}
	k, pairs := 0, 0
	for k < len(a) {
		n := digitsAt(a, k)
		if n == 0 {
			return false
		}
		k += n
		if k < len(a) && a[k] == '.' {
			m := digitsAt(a, k+1)
			if m == 0 {
				return false
			}
			k += 1 + m
		}
		e := k
		for e < len(a) && isLetter(a[e]) {
			e++
		}
		switch strings.ToLower(a[k:e]) {
		case "ns", "us", "µs", "μs", "ms", "s", "sec", "secs", "m", "min", "mins", "h", "hr", "hrs", "d":
		default:
			return false
		}
		k = e
		pairs++
	}
	return pairs > 0
}

func isIP(a string) bool {
	if len(a) > 2 && a[0] == '[' && a[len(a)-1] == ']' {
		a = a[1 : len(a)-1]
	}
	if p := strings.IndexByte(a, '/'); p > 0 && digitsAt(a, p+1) == len(a)-p-1 && len(a)-p-1 <= 3 {
		a = a[:p] // CIDR
	}
	// IPv4
	k, parts := 0, 0
	for parts < 4 {
		n := digitsAt(a, k)
		if n == 0 || n > 3 {
			break
		}
		k += n
		parts++
		if parts < 4 {
			if k >= len(a) || a[k] != '.' {
				break
			}
			k++
		}
	}
	if parts == 4 && k == len(a) {
		return true
	}
	// IPv6: hex groups and colons, at least two colons.
	colons := strings.Count(a, ":")
	if colons < 2 || colons > 7 {
		return false
	}
	for k := 0; k < len(a); k++ {
		if !isHexDigit(a[k]) && a[k] != ':' && a[k] != '.' {
			return false
		}
	}
	return true
}

func isEmail(a string) bool {
	at := strings.IndexByte(a, '@')
	if at <= 0 || at == len(a)-1 || strings.IndexByte(a[at+1:], '@') >= 0 {
		return false
	}
	dom := a[at+1:]
	dot := strings.LastIndexByte(dom, '.')
	return dot > 0 && dot < len(dom)-2
}

// isNumber: -1, 3.14, 1e9, 1,000, 0x1F (→ false here; isHex), 10MB, 95%.
func isNumber(a string) bool {
	k := 0
	if a[0] == '-' || a[0] == '+' || a[0] == '#' {
		k++
	}
	n := digitsAt(a, k)
	if n == 0 {
		return false
	}
	k += n
	for k < len(a) && (a[k] == ',' || a[k] == '.') && digitsAt(a, k+1) > 0 {
		k += 1 + digitsAt(a, k+1)
	}
	if k < len(a) && (a[k] == 'e' || a[k] == 'E') {
		e := k + 1
		if e < len(a) && (a[e] == '-' || a[e] == '+') {
			e++
		}
		if m := digitsAt(a, e); m > 0 && e+m == len(a) {
			return true
		}
	}
	switch strings.ToLower(a[k:]) {
	case "", "%", "b", "kb", "mb", "gb", "tb", "kib", "mib", "gib", "tib", "k", "x", "st", "nd", "rd", "th", "l", "ul":
		return true
	}
	return false
}

func isHex(a string) bool {
	if len(a) > 2 && a[0] == '0' && (a[1] == 'x' || a[1] == 'X') {
		for k := 2; k < len(a); k++ {
			if !isHexDigit(a[k]) {
				return false
			}
		}
		return true
	}
	if len(a) < 8 {
		return false
	}
	for k := 0; k < len(a); k++ {
		if !isHexDigit(a[k]) {
			return false
		}
	}
	return true
}

// Mining: similar shapes merge, Drain-style.

// MinerDepth is how many leading words two shapes must share to merge: they
// name the error ("Customer <id> not found" never merges with "Order <id>
// not found").
const MinerDepth = 2

// MinerSimilarity is the least share of equal words of two shapes that
// merge.
const MinerSimilarity = 0.6

// Templates maps each mined shape to its template.
type Templates map[string]string

// Mine merges similar shapes into templates: shapes of the same number of
// words whose first MinerDepth words are equal, that differ only in literal
// words (never in a placeholder), in at most 1 - MinerSimilarity of their
// words, and keep at least two literal words in common. Differing words
// become <*>. Shapes are taken in sorted order, so the result depends only
// on the set of shapes, never on the order in which messages came.
func Mine(shapes []string) Templates {
	sorted := append([]string(nil), shapes...)
	sort.Strings(sorted)
	type cluster struct {
		tokens  []string
		members []string
	}
	buckets := map[string][]*cluster{}
	var order []*cluster
	for i, sh := range sorted {
		if i > 0 && sorted[i-1] == sh {
			continue
		}
		toks := words(sh)
		key := bucketKey(toks)
		var best *cluster
		bestSim := 0.0
		for _, c := range buckets[key] {
			if sim, ok := similar(c.tokens, toks); ok && sim > bestSim {
				best, bestSim = c, sim
			}
		}
		if best == nil {
			c := &cluster{tokens: toks, members: []string{sh}}
			buckets[key] = append(buckets[key], c)
			order = append(order, c)
			continue
		}
		for k := range best.tokens {
			if best.tokens[k] != toks[k] {
				best.tokens[k] = PhAny
			}
		}
		best.members = append(best.members, sh)
	}
	out := make(Templates, len(sorted))
	for _, c := range order {
		t := strings.Join(c.tokens, " ")
		for _, m := range c.members {
			out[m] = t
		}
	}
	return out
}

func bucketKey(toks []string) string {
	var b strings.Builder
	b.WriteString(strings.Repeat("#", min(len(toks), 64)))
	for k := 0; k < MinerDepth && k < len(toks); k++ {
		b.WriteByte(0)
		b.WriteString(toks[k])
	}
	return b.String()
}

// similar is the share of equal words of a template and a shape of the same
// length, and whether they may merge.
func similar(tmpl, toks []string) (float64, bool) {
	if len(tmpl) != len(toks) || len(toks) <= MinerDepth {
		return 0, false
	}
	equal, literal := 0, 0
	for k := range toks {
		t, s := tmpl[k], toks[k]
		switch {
		case t == s:
			equal++
			if isWord(s) {
				literal++
			}
		case t == PhAny:
			if strings.IndexByte(s, '<') >= 0 {
				return 0, false
			}
			equal++
		default:
			if k < MinerDepth || strings.IndexByte(s, '<') >= 0 || strings.IndexByte(t, '<') >= 0 {
				return 0, false
			}
		}
	}
	sim := float64(equal) / float64(len(toks))
	if sim < MinerSimilarity || literal < 2 {
		return 0, false
	}
	return sim, true
}

// isWord: a literal word with a letter, no placeholder.
func isWord(s string) bool {
	if strings.IndexByte(s, '<') >= 0 {
		return false
	}
	for k := 0; k < len(s); k++ {
		if isLetter(s[k]) {
			return true
		}
	}
	return false
}

// MatchTemplate reports whether shape fits template word by word, <*>
// matching any word.
func MatchTemplate(template, shape string) bool {
	if template == shape {
		return true
	}
	for {
		t, trest, tok := strings.Cut(template, " ")
		s, srest, sok := strings.Cut(shape, " ")
		if t != s && t != PhAny {
			return false
		}
		if !tok || !sok {
			return tok == sok
		}
		template, shape = trest, srest
	}
}

// placeholders lists the placeholders of a template in order: typed ones
// (as Shape's values are ordered) and <*> words.
func placeholders(template string) []string {
	var out []string
	for i := 0; i < len(template); {
		if template[i] != '<' {
			i++
			continue
		}
		e := strings.IndexByte(template[i:], '>')
		if e < 0 {
			break
		}
		ph := template[i : i+e+1]
		switch ph {
		case PhNum, PhUUID, PhHex, PhID, PhTime, PhIP, PhEmail, PhStr, PhAny:
			out = append(out, ph)
		}
		i += e + 1
	}
	return out
}

// words splits a shape into its words: Shape separates them by one ASCII
// space (other spaces stay inside words).
func words(shape string) []string { return strings.Split(shape, " ") }
