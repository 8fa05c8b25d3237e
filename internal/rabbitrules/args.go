package rabbitrules

import "fmt"

// ArgFinding is what a version does with a queue argument it refuses or
// ignores.
type ArgFinding struct {
	Arg   string
	Value any
	// Since is the first version the finding holds on; Until, when known,
	// the first it no longer holds on.
	Since, Until Version
	// Refused: the declare fails (406 PRECONDITION_FAILED); otherwise the
	// argument is accepted and does nothing. Missing: what it does nothing
	// of matters (a retry delay that does not happen).
	Refused, Missing bool
	// Why explains it in a sentence, naming the version.
	Why string
}

// On reports whether the finding holds on version v (false when v is
// unknown).
func (f ArgFinding) On(v Version) bool {
	if f.Until.Known && (!v.Known || v.AtLeast(f.Until.Major, f.Until.Minor)) {
		return false
	}
	return v.AtLeast(f.Since.Major, f.Since.Minor)
}

// DelayedRetryTypes are the values of x-delayed-retry-type: which returned
// messages a quorum queue holds back before it delivers them again.
var DelayedRetryTypes = []string{"disabled", "all", "failed", "returned"}

// DelayedRetrySince is the first version with a quorum queue's native
// delayed retry.
var DelayedRetrySince = Version{4, 3, true}

// CheckArgs lists what some RabbitMQ version refuses or ignores among a
// queue's arguments:
//   - x-queue-version 1: classic queues v1 are gone in 4.3, which refuses
//     the declare ("unsupported queue version '1'");
//   - x-queue-mode: since 3.12 every classic queue keeps its messages on
//     disk as a lazy one did, and the argument does nothing.
//   - x-delayed-retry-type (other than disabled): before 4.3 a quorum
//     queue accepts the delayed-retry arguments and ignores them (measured
//     on 3.10.8 and 4.0.5), so a returned message comes back at once.
func CheckArgs(args map[string]any) []ArgFinding {
	return CheckQueue(args, nil)
}

// CheckQueue is CheckArgs of a queue's arguments and the definition of the
// policy that applies to it (its keys without the x- prefix).
func CheckQueue(args, policy map[string]any) []ArgFinding {
	var out []ArgFinding
	if v, ok := args["x-delayed-retry-type"]; ok && String(v) != "disabled" {
		out = append(out, delayedRetryFinding("x-delayed-retry-type", v))
	} else if v, ok := policy["delayed-retry-type"]; ok && String(v) != "disabled" {
		out = append(out, delayedRetryFinding("delayed-retry-type", v))
	}
	if v, ok := args["x-queue-version"]; ok {
		if n, ok := Int(v); ok && n == 1 {
			out = append(out, ArgFinding{Arg: "x-queue-version", Value: v, Since: Version{4, 3, true}, Refused: true,
				Why: "RabbitMQ 4.3 removed classic queues v1 and refuses `x-queue-version: 1` (\"unsupported queue version '1'\"); drop the argument or set it to 2"})
		}
	}
	if v, ok := args["x-queue-mode"]; ok {
		out = append(out, ArgFinding{Arg: "x-queue-mode", Value: v, Since: Version{3, 12, true},
			Why: fmt.Sprintf("`x-queue-mode: %s` does nothing on RabbitMQ 3.12 and later (4.3 included): every classic queue keeps its messages on disk as a lazy queue did; drop the argument", String(v))})
	}
	return out
}

func delayedRetryFinding(key string, v any) ArgFinding {
	return ArgFinding{Arg: key, Value: v, Since: Version{0, 0, true}, Until: DelayedRetrySince, Missing: true,
		Why: fmt.Sprintf("`%s: %s` needs RabbitMQ 4.3: earlier versions accept the delayed-retry settings and ignore them, so a returned message is delivered again at once; use a retry ladder (`retry_ladders`) there", key, String(v))}
}

// EquivalenceArgs is a queue's arguments as RabbitMQ compares them when a
// queue is declared again: x-queue-type classic is what no x-queue-type
// means (4.x records it on every classic queue declared without it, and a
// declare with or without it matches either), so it is left out.
func EquivalenceArgs(args map[string]any) map[string]any {
	if t, ok := args["x-queue-type"]; !ok || t != "classic" {
		return args
	}
	out := make(map[string]any, len(args)-1)
	for k, v := range args {
		if k != "x-queue-type" {
			out[k] = v
		}
	}
	return out
}
