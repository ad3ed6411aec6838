package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxConns bounds --conns and conns --n.
const maxConns = 50000

// runFlags is the validated configuration of `oncemq-bench run`.
type runFlags struct {
	Addr     string
	Workload workload
	Load     loadParams
	Prefix   string // topic prefix; default bench/RANDOM
	JSON     string // write the result here too
	Quiet    bool
}

// connsFlags is the validated configuration of `oncemq-bench conns`.
type connsFlags struct {
	Addr          string
	N             int
	PID           int // broker process whose VmRSS is read; 0: memory is not measured
	SessionExpiry uint32
	JSON          string
	Quiet         bool
}

// compareFlags is the validated configuration of `oncemq-bench compare`.
type compareFlags struct {
	Brokers   []string
	Workloads []string // message workload names and/or "conns"
	Sizes     []int
	Load      loadParams
	Conns     int
	Oncemq    string // prebuilt oncemq binary; empty: build it from Repo
	Repo      string // oncemq repository to build from; empty: found from the working directory
	Mosquitto string
	TmpDir    string
	JSON      string
	Plot      string
	Quiet     bool
}

// newFlagSet makes a flag set that reports errors to the caller instead of printing them.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// registerLoad adds the flags of loadParams with the given defaults.
func registerLoad(fs *flag.FlagSet, p *loadParams, def loadParams) {
	*p = def
	fs.IntVar(&p.Size, "size", def.Size, fmt.Sprintf("payload bytes (at least %d: publisher, sequence and send time)", headerSize))
	fs.IntVar(&p.Count, "count", def.Count, "messages published in all, split over the publishers; 0: until --duration")
	fs.DurationVar(&p.Duration, "duration", def.Duration, "stop publishing after this long; 0: until --count")
	fs.Float64Var(&p.Rate, "rate", def.Rate, "target publish rate of all publishers together, msgs/s; 0: as fast as the window allows")
	fs.IntVar(&p.Window, "window", def.Window, "in-flight window: unacknowledged QoS 1/2 publishes per publisher")
	fs.IntVar(&p.ReceiveMax, "receive-max", def.ReceiveMax, "Receive Maximum the subscribers announce (their in-flight window)")
	fs.DurationVar(&p.Drain, "drain", def.Drain, "how long to wait for deliveries after the last publish")
	fs.DurationVar(&p.Settle, "settle", def.Settle, "extra wait after the last expected delivery, to catch late duplicates")
	fs.Func("session-expiry", fmt.Sprintf("Session Expiry Interval of every client, seconds (default %d)", def.SessionExpiry), func(v string) error {
		n, err := strconv.ParseUint(v, 10, 32)
		p.SessionExpiry = uint32(n)
		return err
	})
}

func (p loadParams) validate() error {
	switch {
	case p.Size < headerSize || p.Size > 1<<20:
		return fmt.Errorf("--size %d: must be between %d and %d", p.Size, headerSize, 1<<20)
	case p.Count < 0:
		return fmt.Errorf("--count %d: must not be negative", p.Count)
	case p.Duration < 0:
		return fmt.Errorf("--duration %v: must not be negative", p.Duration)
	case p.Count == 0 && p.Duration == 0:
		return errors.New("give --count or --duration (or both: whichever comes first)")
	case p.Rate < 0:
		return fmt.Errorf("--rate %v: must not be negative", p.Rate)
	case p.Window < 1 || p.Window > 65535:
		return fmt.Errorf("--window %d: must be between 1 and 65535", p.Window)
	case p.ReceiveMax < 1 || p.ReceiveMax > 65535:
		return fmt.Errorf("--receive-max %d: must be between 1 and 65535", p.ReceiveMax)
	case p.Drain <= 0:
		return fmt.Errorf("--drain %v: must be positive", p.Drain)
	case p.Settle < 0:
		return fmt.Errorf("--settle %v: must not be negative", p.Settle)
	}
	return nil
}

var defaultLoad = loadParams{
	Size:          16,
	Count:         20000,
	Window:        16,
	ReceiveMax:    1024,
	Drain:         30 * time.Second,
	Settle:        500 * time.Millisecond,
	SessionExpiry: 3600,
}

// parseRunFlags reads the flags of `run`. --pubs, --subs and --qos override the workload's.
func parseRunFlags(args []string) (runFlags, error) {
	var f runFlags
	fs := newFlagSet("run")
	fs.StringVar(&f.Addr, "addr", "127.0.0.1:1883", "broker address host:port")
	name := fs.String("workload", "qos2-1to1", "workload: "+workloadNames())
	pubs := fs.Int("pubs", 0, "publishers (default: the workload's)")
	subs := fs.Int("subs", 0, "subscribers (default: the workload's)")
	qos := fs.Int("qos", -1, "QoS of publishes and subscriptions (default: the workload's)")
	registerLoad(fs, &f.Load, defaultLoad)
	fs.StringVar(&f.Prefix, "prefix", "", "topic prefix; publishers use PREFIX/pN, subscribers PREFIX/# (default bench/RANDOM)")
	fs.StringVar(&f.JSON, "json", "", "also write the result as JSON to this file")
	fs.BoolVar(&f.Quiet, "quiet", false, "no progress line on stderr")
	if err := parseFlags(fs, args, "oncemq-bench [run] [flags]"); err != nil {
		return f, err
	}
	w, err := findWorkload(*name)
	if err != nil {
		return f, err
	}
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "pubs":
			w.Pubs, w.Name = *pubs, "custom"
		case "subs":
			w.Subs, w.Name = *subs, "custom"
		case "qos":
			w.QoS, w.Name = byte(*qos), "custom"
		}
	})
	switch {
	case w.Pubs < 1 || w.Pubs > 65535:
		return f, fmt.Errorf("--pubs %d: must be between 1 and 65535", w.Pubs)
	case w.Subs < 1:
		return f, fmt.Errorf("--subs %d: must be at least 1", w.Subs)
	case *qos > 2 || (*qos < 0 && *qos != -1):
		return f, fmt.Errorf("--qos %d: must be 0, 1 or 2", *qos)
	}
	f.Workload = w
	if strings.ContainsAny(f.Prefix, "#+") {
		return f, fmt.Errorf("--prefix %q: must not contain wildcards", f.Prefix)
	}
	return f, f.Load.validate()
}

// parseConnsFlags reads the flags of `conns`.
func parseConnsFlags(args []string) (connsFlags, error) {
	var f connsFlags
	fs := newFlagSet("conns")
	fs.StringVar(&f.Addr, "addr", "127.0.0.1:1883", "broker address host:port")
	fs.IntVar(&f.N, "n", 10000, fmt.Sprintf("idle connections to open (at most %d)", maxConns))
	fs.IntVar(&f.PID, "pid", 0, "broker process id, to read its VmRSS before and after (0: memory not measured)")
	expiry := fs.Uint("session-expiry", 3600, "Session Expiry Interval of the connections, seconds")
	fs.StringVar(&f.JSON, "json", "", "also write the result as JSON to this file")
	fs.BoolVar(&f.Quiet, "quiet", false, "no progress line on stderr")
	if err := parseFlags(fs, args, "oncemq-bench conns [flags]"); err != nil {
		return f, err
	}
	if f.N < 1 || f.N > maxConns {
		return f, fmt.Errorf("--n %d: must be between 1 and %d", f.N, maxConns)
	}
	if *expiry > 1<<32-1 {
		return f, fmt.Errorf("--session-expiry %d: too large", *expiry)
	}
	f.SessionExpiry = uint32(*expiry)
	return f, nil
}

var allBrokers = []string{"oncemq-always", "oncemq-none", "mosquitto", "mochi", "mochi-bolt"}

// parseCompareFlags reads the flags of `compare`.
func parseCompareFlags(args []string) (compareFlags, error) {
	var f compareFlags
	fs := newFlagSet("compare")
	brokers := fs.String("brokers", strings.Join(allBrokers, ","), "brokers to run, in order")
	wls := fs.String("workloads", workloadNames()+", "+connsWorkload, "workloads to run, in order")
	sizes := fs.String("sizes", "16,4096", "payload sizes in bytes; every message workload runs with each")
	def := defaultLoad
	def.Duration = 60 * time.Second // a cap, so that a slow peer cannot hold the run for ever
	registerLoad(fs, &f.Load, def)
	fs.IntVar(&f.Conns, "conns", 10000, fmt.Sprintf("idle connections for the conns workload (at most %d)", maxConns))
	fs.StringVar(&f.Oncemq, "oncemq", "", "oncemq binary to run (default: go build ./cmd/oncemq from --repo)")
	fs.StringVar(&f.Repo, "repo", "", "oncemq repository to build from (default: found from the working directory)")
	fs.StringVar(&f.Mosquitto, "mosquitto", "/usr/sbin/mosquitto", "mosquitto binary")
	fs.StringVar(&f.TmpDir, "tmp", "", "folder for the brokers' data directories (default: the system's temp folder)")
	fs.StringVar(&f.JSON, "json", "", "also write the results as JSON to this file")
	fs.StringVar(&f.Plot, "plot", "", "draw delivered msgs/s and p99 latency per broker and workload into this PNG file")
	fs.BoolVar(&f.Quiet, "quiet", false, "no progress line on stderr")
	if err := parseFlags(fs, args, "oncemq-bench compare [flags]"); err != nil {
		return f, err
	}
	f.Brokers = splitList(*brokers)
	for _, b := range f.Brokers {
		if !slices.Contains(allBrokers, b) {
			return f, fmt.Errorf("--brokers: unknown broker %q (known: %s)", b, strings.Join(allBrokers, ", "))
		}
	}
	f.Workloads = splitList(*wls)
	for _, w := range f.Workloads {
		if w == connsWorkload {
			continue
		}
		if _, err := findWorkload(w); err != nil {
			return f, fmt.Errorf("--workloads: %v", err)
		}
	}
	for _, s := range splitList(*sizes) {
		n, err := strconv.Atoi(s)
		if err != nil {
			return f, fmt.Errorf("--sizes: %q is not a number of bytes", s)
		}
		f.Sizes = append(f.Sizes, n)
	}
	switch {
	case len(f.Brokers) == 0:
		return f, errors.New("--brokers: none given")
	case len(f.Workloads) == 0:
		return f, errors.New("--workloads: none given")
	case len(f.Sizes) == 0:
		return f, errors.New("--sizes: none given")
	case f.Conns < 1 || f.Conns > maxConns:
		return f, fmt.Errorf("--conns %d: must be between 1 and %d", f.Conns, maxConns)
	}
	for _, s := range f.Sizes {
		p := f.Load
		p.Size = s
		if err := p.validate(); err != nil {
			return f, err
		}
	}
	return f, f.Load.validate()
}

// parseFlags parses args, turning --help into usage on stdout and flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string, synopsis string) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fmt.Fprintf(stdout, "Usage: %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
		return err
	}
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
