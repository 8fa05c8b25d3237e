package cmd

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/dlq-tools/dlq/broker"
)

// The Go runtime settings dlq changes, all of them: each for the run of
// one kind of command, each undone when the command ends, and none when
// the user set the matching environment variable (GOMAXPROCS, GOGC).
// scripts/bench/runtime.sh (make bench) measures each one against Go's
// default, with that variable set.

// oneProcessor runs Go code on one processor while messages move between
// brokers (redrive, discard, purge). The engine decides messages in one
// goroutine and hands them between a few others that mostly wait on the
// network, so more processors add wake-ups across threads and CPU per
// message, taken from a broker that may share the machine. A source read
// in parallel (an archive: Traits.ParallelRead) keeps every processor for
// its decoder. The returned
// func restores the setting once no move needs it (tests run several
// moves in one process).
func oneProcessor(src broker.Broker) func() {
	if os.Getenv("GOMAXPROCS") != "" || broker.TraitsOf(src, broker.Queue{}).ParallelRead {
		return func() {}
	}
	procs.Lock()
	defer procs.Unlock()
	if procs.users == 0 {
		procs.prev = runtime.GOMAXPROCS(1)
	}
	procs.users++
	var once sync.Once
	return func() {
		once.Do(func() {
			procs.Lock()
			defer procs.Unlock()
			if procs.users--; procs.users == 0 {
				runtime.GOMAXPROCS(procs.prev)
			}
		})
	}
}

// procs counts the moves running on one processor.
var procs struct {
	sync.Mutex
	users, prev int
}

// statsGCPercent is the garbage collector's target during `dlq stats`.
// Stats holds a fixed Bloom filter without pointers and a few read
// buffers, and reading leaves little garbage. With Go's default of 100 the
// heap may grow to twice the live data before a collection, so the peak
// would creep up with the length of the read; collecting more often keeps
// it flat for about the same CPU time.
const statsGCPercent = 25

// collectOften sets the collector's target for `dlq stats` and returns
// the func that restores it.
func collectOften() func() {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(statsGCPercent)
	return func() { debug.SetGCPercent(prev) }
}
