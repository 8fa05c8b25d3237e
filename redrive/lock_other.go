//go:build !unix

package redrive

import "os"

// lockFile is a no-op where advisory locks are unavailable: a journal of a
// running process may then be taken for an interrupted one.
func lockFile(f *os.File, nonblocking bool) error { return nil }

func unlockFile(f *os.File) {}
