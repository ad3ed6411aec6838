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
	Out      string // results folder; empty: a new one under the system's temp folder
	Quiet    bool
}

// connsFlags is the validated configuration of `oncemq-bench conns`.
type connsFlags struct {
	Addr          string
	N             int
	PID           int // broker process whose VmRSS is read; 0: memory is not measured
	SessionExpiry uint32
	Out           string
	Quiet         bool
}

// newFlagSet makes a flag set that reports errors to the caller instead of printing them.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// outFlagHelp is the help of every command's --out.
const outFlagHelp = "write the results into folder `DIR`, created if missing (default: a new folder under the system's temp folder; printed at the end)"

// registerLoad adds the flags of loadParams with the given defaults.
func registerLoad(fs *flag.FlagSet, p *loadParams, def loadParams) {
	*p = def
	fs.IntVar(&p.Size, "size", def.Size, fmt.Sprintf("payload `bytes` (at least %d: publisher, sequence and send time)", headerSize))
	fs.IntVar(&p.Count, "count", def.Count, "messages published in all, split over the publishers; 0: until --duration")
	fs.DurationVar(&p.Duration, "duration", def.Duration, "stop publishing after this long; 0: until --count")
	fs.Float64Var(&p.Rate, "rate", def.Rate, "target publish rate of all publishers together, `msgs/s`; 0: as fast as the window allows")
	fs.IntVar(&p.Window, "window", def.Window, "in-flight window: unacknowledged QoS 1/2 publishes per publisher")
	fs.IntVar(&p.ReceiveMax, "receive-max", def.ReceiveMax, "Receive Maximum the subscribers announce (their in-flight window)")
	fs.DurationVar(&p.Drain, "drain", def.Drain, "how long to wait for deliveries after the last publish")
	fs.DurationVar(&p.Settle, "settle", def.Settle, "extra wait after the last expected delivery, to catch late duplicates")
	fs.Func("session-expiry", fmt.Sprintf("Session Expiry Interval of every client, `seconds` (default %d)", def.SessionExpiry), func(v string) error {
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

const runUsage = `Usage: oncemq-bench [run] [flags]

Run one workload against the broker at --addr, which must be running already. Subscribers connect
and subscribe, then publishers publish --count messages (or for --duration); the bench waits for
every delivery and counts. It prints publish and delivery rates, publish-to-delivery latency and
lost and duplicated messages, and writes them as run.json into --out. --pubs, --subs and --qos
override the workload's.
`

// parseRunFlags reads the flags of `run`; --help writes the usage to help and returns
// flag.ErrHelp.
func parseRunFlags(args []string, help io.Writer) (runFlags, error) {
	var f runFlags
	fs := newFlagSet("run")
	fs.StringVar(&f.Addr, "addr", "127.0.0.1:1883", "broker address `host:port`")
	name := fs.String("workload", "qos2-1to1", "workload: "+workloadNames())
	pubs := fs.Int("pubs", 0, "publishers (default: the workload's)")
	subs := fs.Int("subs", 0, "subscribers (default: the workload's)")
	qos := fs.Int("qos", -1, "QoS of publishes and subscriptions (default: the workload's)")
	registerLoad(fs, &f.Load, defaultLoad)
	fs.StringVar(&f.Prefix, "prefix", "", "topic prefix; publishers use PREFIX/pN, subscribers PREFIX/# (default bench/RANDOM)")
	fs.StringVar(&f.Out, "out", "", outFlagHelp)
	fs.BoolVar(&f.Quiet, "quiet", false, "no progress line on stderr")
	if err := parseFlags(fs, args, help, runUsage); err != nil {
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

const connsUsage = `Usage: oncemq-bench conns [flags]

Open --n idle MQTT 5 connections with persistent sessions (Clean Start 0, Session Expiry) to the
broker at --addr, which must be running already, hold them, and close them. With --pid, the
broker's resident memory is read before and after, for its memory per connection. The result is
printed and written as conns.json into --out.
`

// parseConnsFlags reads the flags of `conns`.
func parseConnsFlags(args []string, help io.Writer) (connsFlags, error) {
	var f connsFlags
	fs := newFlagSet("conns")
	fs.StringVar(&f.Addr, "addr", "127.0.0.1:1883", "broker address `host:port`")
	fs.IntVar(&f.N, "n", 10000, fmt.Sprintf("idle connections to open (at most %d)", maxConns))
	fs.IntVar(&f.PID, "pid", 0, "broker process id, to read its VmRSS before and after (0: memory not measured)")
	expiry := fs.Uint("session-expiry", 3600, "Session Expiry Interval of the connections, `seconds`")
	fs.StringVar(&f.Out, "out", "", outFlagHelp)
	fs.BoolVar(&f.Quiet, "quiet", false, "no progress line on stderr")
	if err := parseFlags(fs, args, help, connsUsage); err != nil {
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

// parseFlags parses args. --help writes usage and the flags to help and returns flag.ErrHelp.
// The flag package's messages name a flag "-name"; the errors returned name it "--name", as it
// is written.
func parseFlags(fs *flag.FlagSet, args []string, help io.Writer, usage string) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		writeUsage(help, fs, usage)
		return err
	}
	if err != nil {
		msg := err.Error()
		if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
			return fmt.Errorf("unknown flag --%s", strings.TrimPrefix(name, "-"))
		}
		if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
			return fmt.Errorf("flag --%s needs a value", strings.TrimPrefix(name, "-"))
		}
		msg = strings.Replace(msg, " for flag -", " for flag --", 1) // invalid value "v" for flag -name: ...
		msg = strings.Replace(msg, " for -", " for --", 1)           // invalid boolean value "v" for -name: ...
		return errors.New(msg)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// writeUsage writes usage and then every flag of fs, spelled with two dashes, with its default.
func writeUsage(w io.Writer, fs *flag.FlagSet, usage string) {
	fmt.Fprint(w, usage, "\nFlags:\n")
	fs.VisitAll(func(f *flag.Flag) {
		arg, help := flag.UnquoteUsage(f)
		if arg != "" {
			arg = " " + arg
		}
		fmt.Fprintf(w, "  --%s%s\n        %s", f.Name, arg, help)
		if !slices.Contains([]string{"", "0", "0s", "false"}, f.DefValue) {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
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
