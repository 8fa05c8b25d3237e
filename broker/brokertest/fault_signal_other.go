//go:build !unix

package brokertest

import (
	"errors"
	"os"
	"runtime"
)

// canFreeze: without SIGSTOP, a fault cannot be put in place while dlq is
// provably mid-run; Faults skips those scenarios.
const canFreeze = false

func freeze(*os.Process) error { return errors.New("no SIGSTOP on " + runtime.GOOS) }
func thaw(*os.Process)         {}
