// Command cluster-spike measures replicated commits of oncemq-shaped batches on a three-node
// cluster of each candidate engine (embedded etcd; hashicorp/raft with raft-boltdb), beside the
// single-node bbolt group commit, and the failover of each cluster when its leader is killed.
// It is a measurement for docs/CLUSTER.md, not part of the broker.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "node" {
		if err := runNode(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "node:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "cluster-spike:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("cluster-spike", flag.ContinueOnError)
	duration := fs.Duration("duration", 10*time.Second, "length of each throughput measurement")
	writerList := fs.String("writers", "1,16,256", "concurrent writers, one measurement per value")
	engineList := fs.String("engines", "bbolt,etcd,raft", "engines to measure (bbolt is the single-node baseline)")
	rounds := fs.Int("failover-rounds", 3, "leader kills per cluster engine (0: none)")
	failWriters := fs.Int("failover-writers", 16, "concurrent writers during a failover")
	dir := fs.String("dir", "", "folder for the nodes' data (default: a new temporary folder, removed at the end)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	writers, err := parseInts(*writerList)
	if err != nil {
		return err
	}
	engines := strings.Split(*engineList, ",")
	root, err := tempRoot(*dir)
	if err != nil {
		return err
	}
	if *dir == "" {
		defer os.RemoveAll(root)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	printMachine()

	var results []loadResult
	for _, w := range writers {
		for _, engine := range engines {
			r, err := measureLoad(engine, root, w, *duration)
			if err != nil {
				return fmt.Errorf("%s, %d writers: %w (node logs: %s)", engine, w, err, nodeLogs(root))
			}
			log.Info("measured", "engine", engine, "writers", w, "batches/s", int(r.perSecond()), "p50", r.P50, "p99", r.P99, "errors", r.Errors)
			results = append(results, r)
		}
	}
	printLoad(results)

	var failovers []failoverResult
	for _, engine := range engines {
		if engine == "bbolt" {
			continue
		}
		for range *rounds {
			f, err := runFailover(engine, root, *failWriters, 3*time.Second, 3*time.Second, log)
			if err != nil {
				return fmt.Errorf("%s failover: %w (node logs: %s)", engine, err, nodeLogs(root))
			}
			log.Info("failover", "engine", engine, "resume", f.Resume, "acked", f.Acked, "missing", f.Missing)
			failovers = append(failovers, f)
		}
	}
	printFailover(failovers)
	for _, f := range failovers {
		if f.Missing > 0 {
			return fmt.Errorf("%s lost %d acknowledged batches", f.Engine, f.Missing)
		}
	}
	return nil
}

func measureLoad(engine, root string, writers int, d time.Duration) (loadResult, error) {
	s, err := openEngine(engine, root, true)
	if err != nil {
		return loadResult{}, err
	}
	defer s.close()
	return runLoad(s.commit, engine, writers, d)
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("writers %q: want positive integers", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func sortTimes(t []time.Time) { slices.SortFunc(t, func(a, b time.Time) int { return a.Compare(b) }) }
