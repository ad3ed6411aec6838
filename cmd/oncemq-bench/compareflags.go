package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// compareFlags is the validated configuration of `oncemq-bench compare`.
type compareFlags struct {
	Brokers   []string
	Workloads []string // message workload names and/or "conns"
	Sizes     []int
	Load      loadParams
	Conns     int
	WithMochi bool   // in-memory mochi-mqtt may run
	Oncemq    string // prebuilt oncemq binary; empty: build it from Repo
	Repo      string // oncemq repository to build from; empty: found from the working directory
	Mosquitto string
	TmpDir    string
	Out       string // results folder; empty: a new one under the system's temp folder
	Quiet     bool
}

// knownBrokers are the brokers compare can start, in the order of the tables.
var knownBrokers = []string{"oncemq-always", "oncemq-none", "mosquitto", "mochi", "mochi-bolt"}

// mochiInMemory is the broker that runs only with --with-mochi: mochi-mqtt v2.7.9 without
// storage deadlocks under concurrent QoS 1/2 load (see BENCHMARKS.md), and every run it stalls
// waits out the acknowledgement timeout and the kill at stop, adding minutes and nothing new.
const mochiInMemory = "mochi"

// defaultBrokers is --brokers without --with-mochi.
var defaultBrokers = []string{"oncemq-always", "oncemq-none", "mosquitto", "mochi-bolt"}

// compareDuration is how long a default compare takes: the full run recorded in BENCHMARKS.md
// took 17 minutes on a 2-core machine.
const compareDuration = "about 17 minutes"

const compareUsage = `Usage: oncemq-bench compare [flags]

Start each broker of --brokers in turn, as a child process on a fresh data directory and port, and
run every workload of --workloads with every payload size of --sizes against it. oncemq is built
from the repository the command runs in, unless --oncemq names a binary; a broker that is not
installed shows as a "missing" row. One line per phase goes to stderr as the run goes. The tables
go to stdout and, with the JSON and a plot, into --out as compare.md, compare.json and compare.png.

A default run takes ` + compareDuration + ` on a 2-core machine.

In-memory mochi-mqtt ("mochi") runs only with --with-mochi: v2.7.9 deadlocks under concurrent
QoS 1/2 load (see BENCHMARKS.md). mochi-mqtt with its bbolt store ("mochi-bolt") runs by default.
`

// parseCompareFlags reads the flags of `compare`; --help writes the usage to help and returns
// flag.ErrHelp.
func parseCompareFlags(args []string, help io.Writer) (compareFlags, error) {
	var f compareFlags
	fs := newFlagSet("compare")
	brokers := fs.String("brokers", strings.Join(defaultBrokers, ","), "`list` of brokers to run, in order (known: "+strings.Join(knownBrokers, ", ")+")")
	fs.BoolVar(&f.WithMochi, "with-mochi", false, "also run in-memory mochi-mqtt (\"mochi\"), which deadlocks under QoS 1/2 load")
	wls := fs.String("workloads", defaultWorkloadNames()+", "+connsWorkload,
		"`list` of workloads to run, in order (also: "+workloadNames()+")")
	sizes := fs.String("sizes", "16,4096", "`list` of payload sizes in bytes; every message workload runs with each")
	def := defaultLoad
	def.Duration = 60 * time.Second // a cap, so that a slow peer cannot hold the run for ever
	registerLoad(fs, &f.Load, def)
	fs.IntVar(&f.Conns, "conns", 10000, fmt.Sprintf("idle connections for the conns workload (at most %d)", maxConns))
	fs.StringVar(&f.Oncemq, "oncemq", "", "oncemq binary to run, at `path` (default: go build ./cmd/oncemq from --repo)")
	fs.StringVar(&f.Repo, "repo", "", "oncemq repository `folder` to build from (default: found from the working directory)")
	fs.StringVar(&f.Mosquitto, "mosquitto", "/usr/sbin/mosquitto", "mosquitto binary at `path`; if there is none there, mosquitto on PATH")
	fs.StringVar(&f.TmpDir, "tmp", "", "`folder` for the brokers' data directories, which are removed at the end (default: the system's temp folder)")
	fs.StringVar(&f.Out, "out", "", outFlagHelp)
	fs.BoolVar(&f.Quiet, "quiet", false, "no phase or progress lines on stderr")
	if err := parseFlags(fs, args, help, compareUsage); err != nil {
		return f, err
	}
	f.Brokers = splitList(*brokers)
	if f.WithMochi && !slices.Contains(f.Brokers, mochiInMemory) {
		f.Brokers = withMochi(f.Brokers)
	}
	f.Workloads = splitList(*wls)
	for _, s := range splitList(*sizes) {
		n, err := strconv.Atoi(s)
		if err != nil {
			return f, fmt.Errorf("--sizes: %q is not a number of bytes", s)
		}
		f.Sizes = append(f.Sizes, n)
	}
	return f, f.validate()
}

// withMochi adds in-memory mochi to a broker list: before mochi-bolt if that is in it, else last.
func withMochi(brokers []string) []string {
	i := slices.Index(brokers, "mochi-bolt")
	if i < 0 {
		i = len(brokers)
	}
	return slices.Insert(slices.Clone(brokers), i, mochiInMemory)
}

func (f *compareFlags) validate() error {
	for _, b := range f.Brokers {
		switch {
		case !slices.Contains(knownBrokers, b):
			return fmt.Errorf("--brokers: unknown broker %q (known: %s)", b, strings.Join(knownBrokers, ", "))
		case b == mochiInMemory && !f.WithMochi:
			return fmt.Errorf("--brokers: %q (mochi-mqtt in memory) deadlocks under QoS 1/2 load; add --with-mochi to run it anyway", b)
		}
	}
	for _, w := range f.Workloads {
		if _, err := findWorkload(w); err != nil && w != connsWorkload {
			return fmt.Errorf("--workloads: %v", err)
		}
	}
	switch {
	case len(f.Brokers) == 0:
		return errors.New("--brokers: none given")
	case len(f.Workloads) == 0:
		return errors.New("--workloads: none given")
	case len(f.Sizes) == 0:
		return errors.New("--sizes: none given")
	case f.Conns < 1 || f.Conns > maxConns:
		return fmt.Errorf("--conns %d: must be between 1 and %d", f.Conns, maxConns)
	}
	for _, s := range f.Sizes {
		p := f.Load
		p.Size = s
		if err := p.validate(); err != nil {
			return err
		}
	}
	return f.Load.validate()
}
