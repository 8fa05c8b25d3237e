package broker

import (
	"strings"
	"unicode"
)

// Role is what a queue is for in a dead-letter topology.
type Role string

const (
	// RoleWork is a queue that applications consume; its failures may be
	// dead-lettered elsewhere.
	RoleWork Role = "work"
	// RoleRetry is a delay step: a RabbitMQ queue whose messages expire
	// (a message TTL) and are dead-lettered back towards a work queue, or
	// an SQS delay queue of a retry ladder.
	RoleRetry Role = "retry"
	// RoleDLQ is a dead-letter queue: failed messages wait there for a
	// person or a redrive.
	RoleDLQ Role = "dlq"
	// RoleParking is the last stop: a parking lot or graveyard, or a queue
	// that receives only what other dead-letter queues give up.
	RoleParking Role = "parking"
)

// IsDead reports the roles that hold dead letters (dlq and parking): the
// queues Queue.IsDLQ marks.
func (r Role) IsDead() bool { return r == RoleDLQ || r == RoleParking }

// RoleSource says what a queue's role was inferred from.
type RoleSource string

const (
	// RoleFromTopology: the broker's dead-letter settings and relations
	// (dead-letter exchanges and bindings, message TTLs, SQS redrive and
	// redrive-allow policies).
	RoleFromTopology RoleSource = "topology"
	// RoleFromMessages: the death records of the messages (archives).
	RoleFromMessages RoleSource = "messages"
	// RoleFromName: the queue's name alone (a naming convention); nothing
	// in the topology says so.
	RoleFromName RoleSource = "name"
	// RoleByDefault: nothing says anything; a queue is a work queue.
	RoleByDefault RoleSource = "default"
)

// DLQHint is what an adapter knows about a queue being a dead-letter queue
// beyond the relations in Queue.
type DLQHint int

const (
	HintNone DLQHint = iota
	// HintDLQ: the broker names the queue a dead-letter queue although no
	// listed queue dead-letters into it (an SQS RedriveAllowPolicy naming
	// its sources).
	HintDLQ
	// HintNotDLQ: the broker forbids the queue to be one (an SQS
	// RedriveAllowPolicy of denyAll); its name is not taken as a sign.
	HintNotDLQ
)

// AssignRoles sets Role, RoleSource and IsDLQ of every queue of qs from
// what the adapter filled in: DeadLetterQueues, DeadLetterSources,
// DeadLetterTarget, MessageTTL and DeliveryDelay. hints, when not nil, has
// one entry per queue. Queues named in the relations but not in qs count as
// work queues.
//
// The rules, in order:
//
//  1. retry: a queue whose messages expire into other queues (a message
//     TTL and dead-letter queues), none named like a DLQ, when one of them
//     leads back to it or has dead-letter queues of its own (RabbitMQ
//     retry ladders); from the name, a queue whose name says retry, delay,
//     wait or backoff and that expires into such queues, or whose dead
//     letters come back to it (per-message TTLs), or an SQS delay queue
//     (DelaySeconds).
//  2. dlq: a queue that another queue dead-letters into, the expiry of a
//     retry queue not counting (that is the way back to work); parking
//     when every such queue is itself a dead-letter queue, or when its
//     name says parking or graveyard.
//  3. a hint: HintDLQ makes it a dlq, HintNotDLQ a work queue.
//  4. a name that follows a dead-letter convention (see RoleFromQueueName):
//     dlq or parking, from the name.
//  5. otherwise work.
//
// IsDLQ is true exactly for the roles dlq and parking.
func AssignRoles(qs []Queue, hints []DLQHint) {
	index := make(map[string]int, len(qs))
	for i := range qs {
		index[qs[i].Name] = i
	}
	hint := func(i int) DLQHint {
		if i < len(hints) {
			return hints[i]
		}
		return HintNone
	}
	// The role each queue's name gives, read once.
	named := make([]Role, len(qs))
	for i := range qs {
		named[i], _ = RoleFromQueueName(qs[i].Name)
	}
	deadName := func(name string) bool {
		if j, ok := index[name]; ok {
			return named[j] != ""
		}
		_, ok := RoleFromQueueName(name)
		return ok
	}
	retry := make([]bool, len(qs))
	retryByName := make([]bool, len(qs))
	for i := range qs {
		retry[i], retryByName[i] = isRetry(qs, index, i, deadName)
	}
	// expires reports a source whose dead letters are its expired messages
	// going back to work, not failures.
	expires := func(name string) bool {
		j, ok := index[name]
		return ok && retry[j] && qs[j].DeliveryDelay == 0
	}
	failing := func(i int) []string {
		var out []string
		for _, s := range qs[i].DeadLetterSources {
			if !expires(s) {
				out = append(out, s)
			}
		}
		return out
	}
	// First the role of each queue on its own, then the dead-letter
	// queues that only other dead-letter queues feed become parking.
	fed := make([]bool, len(qs))
	for i := range qs {
		q := &qs[i]
		nameRole := named[i]
		switch {
		case retry[i]:
			q.Role, q.RoleSource = RoleRetry, RoleFromTopology
			if retryByName[i] {
				q.RoleSource = RoleFromName
			}
		case len(failing(i)) > 0:
			fed[i] = true
			q.Role, q.RoleSource = RoleDLQ, RoleFromTopology
		case hint(i) == HintDLQ:
			q.Role, q.RoleSource = RoleDLQ, RoleFromTopology
		case hint(i) == HintNotDLQ:
			q.Role, q.RoleSource = RoleWork, RoleFromTopology
		case nameRole != "":
			q.Role, q.RoleSource = nameRole, RoleFromName
		case len(q.DeadLetterQueues) > 0 || q.DeadLetterTarget != "" || len(q.DeadLetterSources) > 0:
			q.Role, q.RoleSource = RoleWork, RoleFromTopology
		default:
			q.Role, q.RoleSource = RoleWork, RoleByDefault
		}
		if q.Role == RoleDLQ && nameRole == RoleParking {
			q.Role = RoleParking
		}
	}
	for i := range qs {
		if !fed[i] || qs[i].Role != RoleDLQ {
			continue
		}
		parking := true
		for _, s := range failing(i) {
			j, ok := index[s]
			if !ok || j == i || !qs[j].Role.IsDead() {
				parking = false
				break
			}
		}
		if parking {
			qs[i].Role = RoleParking
		}
	}
	for i := range qs {
		qs[i].IsDLQ = qs[i].Role.IsDead()
	}
}

// isRetry applies rule 1 of AssignRoles to qs[i]; byName is true when only
// the name tells it. deadName reports a queue named like a DLQ.
func isRetry(qs []Queue, index map[string]int, i int, deadName func(string) bool) (retry, byName bool) {
	q := &qs[i]
	if q.DeliveryDelay > 0 {
		return retryName(q.Name), true
	}
	if len(q.DeadLetterQueues) == 0 {
		return false, false
	}
	back := false // a dead-letter queue that is not a DLQ leads back
	for _, t := range q.DeadLetterQueues {
		if deadName(t) {
			return false, false
		}
		j, ok := index[t]
		if !ok || j == i {
			continue
		}
		if leadsTo(qs, index, j, q.Name) {
			back = true
		} else if q.MessageTTL > 0 && len(qs[j].DeadLetterQueues) > 0 {
			return true, false
		}
	}
	switch {
	case q.MessageTTL > 0 && back:
		return true, false
	case q.MessageTTL > 0 || back:
		// Messages that expire onwards, or a loop with per-message
		// TTLs: the name decides.
		return retryName(q.Name), true
	}
	return false, false
}

// leadsTo reports whether dead letters of qs[from] reach the queue named
// target, over any number of dead-letterings.
func leadsTo(qs []Queue, index map[string]int, from int, target string) bool {
	seen := map[int]bool{}
	stack := []int{from}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[i] {
			continue
		}
		seen[i] = true
		for _, t := range qs[i].DeadLetterQueues {
			if t == target {
				return true
			}
			if j, ok := index[t]; ok {
				stack = append(stack, j)
			}
		}
	}
	return false
}

// nameWords splits a queue name into lower-case words: at . - _ : / and
// spaces, and where a lower-case letter or digit meets an upper-case one
// (OrdersDLQ, ordersDeadLetter). A trailing .fifo and trailing generic
// words (q, queue) are left out.
func nameWords(name string) []string {
	name = strings.TrimSuffix(name, ".fifo")
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(name)
	for i, r := range rs {
		switch {
		case r == '.' || r == '-' || r == '_' || r == ':' || r == '/' || unicode.IsSpace(r):
			flush()
			continue
		case unicode.IsUpper(r) && len(cur) > 0:
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	for len(words) > 1 && (words[len(words)-1] == "q" || words[len(words)-1] == "queue") {
		words = words[:len(words)-1]
	}
	return words
}

// Words that mark a dead-letter queue by name. dlqWords are unambiguous and
// count as the first or the last word (dlq.orders, orders.dlq); lastWords
// only as the last word (orders.error, but not error-events); parkingWords
// make the role parking, also as the last word only.
var (
	dlqWords     = map[string]bool{"dlq": true, "deadletter": true, "deadletters": true, "deadletterqueue": true}
	lastWords    = map[string]bool{"dead": true, "error": true, "errors": true, "poison": true, "dlx": true, "dl": true}
	parkingWords = map[string]bool{"parking": true, "parkinglot": true, "graveyard": true}
	retryWords   = map[string]bool{"retry": true, "retries": true, "delay": true, "delayed": true, "wait": true, "backoff": true}
)

// RoleFromQueueName returns the role a queue's name gives it by a common
// dead-letter naming convention, and false when the name follows none.
//
// The name is split into words (see nameWords: separators . - _ : / and
// case changes; a trailing .fifo, q or queue does not count). It marks a
// dlq when its last word is dlq, deadletter(s), dead, dead letter(s),
// error(s) (MassTransit's _error, NServiceBus's error), poison, dlx or dl,
// or its first word is dlq or deadletter(s); a parking queue when its last
// word is parking, parkinglot, parking lot or graveyard. Words inside a
// word do not count: terror-events, dlqtool-state, errorhandler and
// dead-reckoning follow no convention, nor do error-events or
// parking-payments, whose marking word is not last.
func RoleFromQueueName(name string) (Role, bool) {
	w := nameWords(name)
	n := len(w)
	if n == 0 {
		return "", false
	}
	last := w[n-1]
	if n >= 2 {
		switch pair := w[n-2] + last; {
		case pair == "parkinglot":
			return RoleParking, true
		case pair == "deadletter" || pair == "deadletters":
			return RoleDLQ, true
		}
	}
	switch {
	case parkingWords[last]:
		return RoleParking, true
	case dlqWords[last] || lastWords[last] || dlqWords[w[0]]:
		return RoleDLQ, true
	case n >= 2 && w[0] == "dead" && strings.HasPrefix(w[1], "letter"):
		return RoleDLQ, true
	}
	return "", false
}

// retryName reports a name with a word that says retry or delay.
func retryName(name string) bool {
	for _, w := range nameWords(name) {
		if retryWords[w] {
			return true
		}
	}
	return false
}
