// Command gendocs writes dlq's man pages (docs/man/dlq.1, dlq-redrive.1, …)
// and markdown reference (docs/cli/dlq.md, …) from the command tree, with
// cobra's doc generator: `make docs`. The output depends on nothing but the
// code (no date, no environment), so that a test can tell when the
// committed docs are stale.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	out := flag.String("out", "docs", "directory to write man/ and cli/ into")
	flag.Parse()
	if err := generate(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}
