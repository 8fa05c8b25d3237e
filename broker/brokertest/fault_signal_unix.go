//go:build unix

package brokertest

import (
	"os"
	"syscall"
)

// canFreeze: the scenarios that put a fault in place while dlq is frozen
// can run here.
const canFreeze = true

func freeze(p *os.Process) error { return p.Signal(syscall.SIGSTOP) }
func thaw(p *os.Process)         { _ = p.Signal(syscall.SIGCONT) }
