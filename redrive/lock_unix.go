//go:build unix

package redrive

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock; nonblocking fails at once when
// another process holds it.
func lockFile(f *os.File, nonblocking bool) error {
	how := syscall.LOCK_EX
	if nonblocking {
		how |= syscall.LOCK_NB
	}
	return syscall.Flock(int(f.Fd()), how)
}

func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
