package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// printMachine says where the figures come from.
func printMachine() {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	fmt.Printf("machine: %s/%s, %d CPUs (%s), %s\n\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), model, runtime.Version())
}

// printLoad prints the throughput table, each cluster row with its ratio to the single-node
// bbolt row measured with the same writers in the same run.
func printLoad(results []loadResult) {
	base := map[int]float64{}
	for _, r := range results {
		if r.Engine == "bbolt" {
			base[r.Writers] = r.perSecond()
		}
	}
	fmt.Println("| engine | writers | batches/s | vs bbolt | p50 ms | p99 ms | errors |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		ratio := "-"
		if b := base[r.Writers]; b > 0 {
			ratio = fmt.Sprintf("%.2f", r.perSecond()/b)
		}
		fmt.Printf("| %s | %d | %.0f | %s | %s | %s | %d |\n", r.Engine, r.Writers, r.perSecond(), ratio, ms(r.P50), ms(r.P99), r.Errors)
	}
	fmt.Println()
}

func printFailover(results []failoverResult) {
	if len(results) == 0 {
		return
	}
	fmt.Println("| engine | killed node | commits resume after | longest ack gap | acked | read back | acked but missing | read back, never acked |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, f := range results {
		fmt.Printf("| %s | %d | %s | %s | %d | %d | %d | %d |\n", f.Engine, f.Killed, ms(f.Resume), ms(f.MaxGap), f.Acked, f.Present, f.Missing, f.Unacked)
	}
	fmt.Println()
}

func ms(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond))
}
