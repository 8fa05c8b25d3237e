// Command dlq operates dead-letter queues on RabbitMQ and Amazon SQS.
package main

import (
	"os"
	"runtime/pprof"

	"github.com/dlq-tools/dlq/cmd"
)

func main() {
	// DLQ_CPUPROFILE writes a CPU profile of the whole run, and
	// DLQ_ALLOCPROFILE a profile of its allocations, for `make bench`
	// investigations with `go tool pprof`.
	if cpu, allocs := os.Getenv("DLQ_CPUPROFILE"), os.Getenv("DLQ_ALLOCPROFILE"); cpu != "" || allocs != "" {
		os.Exit(int(profiled(cpu, allocs)))
	}
	os.Exit(int(cmd.Main()))
}

func profiled(cpu, allocs string) cmd.ExitCode {
	if cpu != "" {
		if f, err := os.Create(cpu); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer f.Close()
				defer pprof.StopCPUProfile()
			}
		}
	}
	code := cmd.Main()
	if allocs != "" {
		if f, err := os.Create(allocs); err == nil {
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	return code
}
