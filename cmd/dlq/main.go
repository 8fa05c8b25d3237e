// Command dlq operates dead-letter queues on RabbitMQ and Amazon SQS.
package main

import (
	"os"
	"runtime/pprof"

	"github.com/dlq-tools/dlq/cmd"
)

func main() {
	// DLQ_CPUPROFILE writes a CPU profile of the whole run, for `make bench`
	// investigations with `go tool pprof`.
	if path := os.Getenv("DLQ_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				code := cmd.Main()
				pprof.StopCPUProfile()
				f.Close()
				os.Exit(int(code))
			}
		}
	}
	os.Exit(int(cmd.Main()))
}
