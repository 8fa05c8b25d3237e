// Command startupbench measures how long dlq takes to start: it runs each
// command line N times (after a few warm-up runs) and prints the median,
// minimum and 90th percentile wall time. scripts/bench/startup.sh runs it
// for `dlq --help` and `dlq version` (make bench).
//
//	go run ./scripts/bench/startupbench -runs 20 bin/dlq --help
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

func main() {
	runs := flag.Int("runs", 20, "timed runs")
	warmup := flag.Int("warmup", 3, "untimed runs first")
	limit := flag.Duration("max-median", 0, "exit 1 when the median is above this (0: report only)")
	flag.Parse()
	if flag.NArg() == 0 || *runs < 1 {
		fmt.Fprintln(os.Stderr, "usage: startupbench [-runs N] [-warmup N] [-max-median D] BINARY [ARGS…]")
		os.Exit(2)
	}
	args := flag.Args()
	run := func() time.Duration {
		c := exec.Command(args[0], args[1:]...)
		start := time.Now()
		if err := c.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "startupbench: %s: %v\n", strings.Join(args, " "), err)
			os.Exit(1)
		}
		return time.Since(start)
	}
	for range *warmup {
		run()
	}
	times := make([]time.Duration, *runs)
	for i := range times {
		times[i] = run()
	}
	slices.Sort(times)
	median := times[len(times)/2]
	if len(times)%2 == 0 {
		median = (times[len(times)/2-1] + times[len(times)/2]) / 2
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	fmt.Printf("%-24s median %s  min %s  p90 %s  (%d runs)\n", strings.Join(args, " "), ms(median), ms(times[0]), ms(times[len(times)*9/10]), *runs)
	if *limit > 0 && median > *limit {
		fmt.Fprintf(os.Stderr, "startupbench: median %s is above %s\n", ms(median), ms(*limit))
		os.Exit(1)
	}
}
