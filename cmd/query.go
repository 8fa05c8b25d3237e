package cmd

import (
	"strings"

	"github.com/dlq-tools/dlq/inspect"
)

// compileFlag compiles a jq flag, naming it in the error.
func compileFlag(flag, expr string) (*inspect.Query, error) {
	if expr == "" {
		return nil, nil
	}
	q, err := inspect.Compile(expr)
	if err != nil {
		return nil, flagErrorf("`%s`: %v", flag, err)
	}
	return q, nil
}

// warnMissingPaths says on stderr which paths a filter reads were null in
// every message it saw, with the nearest paths that exist; it reports
// whether there was one.
func warnMissingPaths(f *Factory, flag string, q *inspect.Query) bool {
	if q == nil {
		return false
	}
	ms := q.MissingPaths()
	for _, m := range ms {
		hint := "check the path against `dlq peek -o json`"
		if len(m.Nearest) > 0 {
			hint = "did you mean `" + strings.Join(m.Nearest, "`, `") + "`?"
		}
		f.IO.Statusf("dlq: `%s`: `%s` is null in all %d messages examined; %s", flag, m.Path, m.Examined, hint)
	}
	return len(ms) > 0
}
