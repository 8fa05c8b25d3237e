package rabbitrules

import "fmt"

// ArgFinding is what a version does with a queue argument it refuses or
// ignores.
type ArgFinding struct {
	Arg   string
	Value any
	// Since is the first version the finding holds on.
	Since Version
	// Refused: the declare fails (406 PRECONDITION_FAILED); otherwise the
	// argument is accepted and does nothing.
	Refused bool
	// Why explains it in a sentence, naming the version.
	Why string
}

// On reports whether the finding holds on version v (false when v is
// unknown).
func (f ArgFinding) On(v Version) bool {
	return v.AtLeast(f.Since.Major, f.Since.Minor)
}

// CheckArgs lists what some RabbitMQ version refuses or ignores among a
// queue's arguments:
//   - x-queue-version 1: classic queues v1 are gone in 4.3, which refuses
//     the declare ("unsupported queue version '1'");
//   - x-queue-mode: since 3.12 every classic queue keeps its messages on
//     disk as a lazy one did, and the argument does nothing.
func CheckArgs(args map[string]any) []ArgFinding {
	var out []ArgFinding
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
