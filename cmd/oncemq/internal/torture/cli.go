package torture

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/oncemq/oncemq/cmd/oncemq/internal/cli"
)

// options are the flags of `oncemq torture`: the run's Config and where the JSON report goes.
type options struct {
	Config
	JSON string // --json FILE; "" for none
}

const tortureUsage = `Usage: oncemq torture [flags]

Start the oncemq binary as a child process on a free loopback port and a fresh data directory, run
publishers (QoS 2, or 1 with --qos 1) and subscribers at QoS 2 with persistent sessions (each client keeps its own state across
reconnects and resends with DUP and the same ids), SIGKILL the broker at random moments while
messages flow and restart it, drain, then count per subscriber what was expected, delivered, lost
and duplicated.

Exit status: 0 only if no acknowledged message was lost or duplicated, no session was lost, the
broker refused no PUBLISH, broke no protocol rule the clients check (Receive Maximum, DUP on
redelivery, payload intact) and never died on its own; 1 otherwise; 2 for bad flags. A failed run
keeps its temporary directory (data/, broker.log) and prints the broker log's tail.

Flags:
`

// tortureFlags lists the flags in usage order: names (the first is the long one), argument, help.
var tortureFlags = []struct{ names, arg, help string }{
	{"publishers,p", "N", "publishers (default 4)"},
	{"subscribers,s", "N", "subscribers (default 2)"},
	{"messages,n", "N", "messages per publisher (default 2000)"},
	{"window,w", "N", "QoS 2 PUBLISHes in flight per publisher (default 16)"},
	{"kills,k", "N", "SIGKILLs of the broker while messages flow (default 10)"},
	{"seed", "N", "seed of the kill moments and client jitter (default: from the clock; printed)"},
	{"timeout", "DURATION", "bound on the whole run (default 10m)"},
	{"drain-timeout", "DURATION", "the drain gives up after this long without progress (default 30s)"},
	{"settle", "DURATION", "quiet time at the end that catches late redeliveries (default 500ms)"},
	{"final-kill", "BOOL", "with kills > 0, kill and restart once more after the drain; every\nsubscriber then resumes once more (default true; --final-kill=false to skip)"},
	{"takeover-every", "DURATION", "add subscribers whose connection is taken over at this interval by a new\none with the same client id (default 0: none)"},
	{"takeover-subscribers", "N", "how many such subscribers with --takeover-every (default 1)"},
	{"payload", "BYTES", "payload size, at least 8 (default 16)"},
	{"receive-maximum", "N", "the subscribers' Receive Maximum (default 64)"},
	{"qos", "N", "the publishers' QoS, 1 or 2 (default 2); subscribers subscribe at QoS 2"},
	{"publisher-amnesia", "", "publishers lose their state at every kill, as a rebooting device does: they\nreconnect with Clean Start and resend what is not complete under new packet ids\nwith the same dedup id (every PUBLISH carries the user property dedup-id)"},
	{"dedup-off", "", "pass --dedup-max 0 to the broker: no duplicate detection by dedup id"},
	{"shared", "N", "instead of plain subscribers, N members of one shared subscription group\n($share/torture/torture/#): the group must get every message exactly once (default 0: off)"},
	{"leave-every", "DURATION", "with --shared 2 or more, a member leaves gracefully about this often (UNSUBSCRIBE,\ncomplete, DISCONNECT) and comes back; one at a time (default 400ms; 0: never)"},
	{"sync", "MODE", "passed to the broker: always or none (default always)"},
	{"binary", "PATH", "the oncemq binary to test (default: this one)"},
	{"broker-log-level", "LEVEL", "the broker's --log-level (default warn)"},
	{"json", "FILE", "also write the report as JSON to FILE"},
	{"keep", "", "keep the temporary directory (data, broker log) even if the run passes"},
}

func writeUsage(w io.Writer) {
	fmt.Fprint(w, tortureUsage)
	for _, f := range tortureFlags {
		names := strings.Split(f.names, ",")
		head := "--" + names[0]
		if len(names) > 1 {
			head = "-" + names[1] + ", " + head
		} else {
			head = "    " + head
		}
		if f.arg != "" && f.arg != "BOOL" {
			head += " " + f.arg
		}
		fmt.Fprintf(w, "  %s\n", head)
		for _, line := range strings.Split(f.help, "\n") {
			fmt.Fprintf(w, "        %s\n", line)
		}
	}
}

// parseOptions parses the flags of `oncemq torture`; the error is flag.ErrHelp for -h. Without
// --seed, the seed comes from the clock. Binary stays empty without --binary.
func parseOptions(args []string) (options, error) {
	o := options{Config: DefaultConfig()}
	fs := flag.NewFlagSet("torture", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	defineFlags(fs, &o)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		msg := err.Error()
		if rest, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
			return o, fmt.Errorf("unknown flag %s", rest)
		}
		return o, errors.New(msg)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	seedGiven := false
	fs.Visit(func(f *flag.Flag) { seedGiven = seedGiven || f.Name == "seed" })
	if !seedGiven {
		o.Seed = time.Now().UnixNano()
	}
	if err := o.Validate(); err != nil {
		return o, err
	}
	if o.TakeoverEvery <= 0 {
		o.TakeoverSubscribers = 0
	}
	if o.Shared > 0 {
		o.Subscribers = 0
	}
	return o, nil
}

// defineFlags maps every flag of tortureFlags to its field of o; the defaults are o's values.
func defineFlags(fs *flag.FlagSet, o *options) {
	intVar := func(p *int, names ...string) {
		for _, n := range names {
			fs.IntVar(p, n, *p, "")
		}
	}
	intVar(&o.Publishers, "publishers", "p")
	intVar(&o.Subscribers, "subscribers", "s")
	intVar(&o.Messages, "messages", "n")
	intVar(&o.Window, "window", "w")
	intVar(&o.Kills, "kills", "k")
	intVar(&o.TakeoverSubscribers, "takeover-subscribers")
	intVar(&o.PayloadSize, "payload")
	intVar(&o.ReceiveMaximum, "receive-maximum")
	intVar(&o.Shared, "shared")
	fs.DurationVar(&o.LeaveEvery, "leave-every", o.LeaveEvery, "")
	fs.Int64Var(&o.Seed, "seed", 0, "")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "")
	fs.DurationVar(&o.DrainTimeout, "drain-timeout", o.DrainTimeout, "")
	fs.DurationVar(&o.Settle, "settle", o.Settle, "")
	fs.DurationVar(&o.TakeoverEvery, "takeover-every", 0, "")
	fs.BoolVar(&o.FinalKill, "final-kill", o.FinalKill, "")
	fs.BoolVar(&o.Keep, "keep", false, "")
	fs.BoolVar(&o.PublisherAmnesia, "publisher-amnesia", false, "")
	fs.BoolVar(&o.DedupOff, "dedup-off", false, "")
	fs.Func("qos", "", func(v string) error {
		switch v {
		case "1", "2":
			o.QoS = v[0] - '0'
			return nil
		}
		return errors.New("want 1 or 2")
	})
	fs.StringVar(&o.Sync, "sync", o.Sync, "")
	fs.StringVar(&o.Binary, "binary", "", "")
	fs.StringVar(&o.BrokerLogLevel, "broker-log-level", o.BrokerLogLevel, "")
	fs.StringVar(&o.JSON, "json", "", "")
}

func parseLogLevel(v string) (string, error) {
	switch strings.ToLower(v) {
	case "debug", "info", "warn", "error":
		return strings.ToLower(v), nil
	}
	return "", errors.New("want debug, info, warn or error")
}

// Main is `oncemq torture`: it runs the torture against --binary (default: this executable) until
// done or SIGINT/SIGTERM, prints the report, and writes the JSON report if asked. Exit status: 0 if
// the run passed, 1 if it failed, 2 for bad flags.
func Main(args []string, env cli.Env) int {
	o, err := parseOptions(args)
	if errors.Is(err, flag.ErrHelp) {
		writeUsage(env.Stdout)
		return cli.ExitOK
	}
	if err != nil {
		return cli.UsageError(env.Stderr, "oncemq torture", err.Error(), "oncemq torture --help")
	}
	if o.Binary == "" {
		if o.Binary, err = os.Executable(); err != nil {
			fmt.Fprintf(env.Stderr, "oncemq torture: cannot find this binary (use --binary): %v\n", err)
			return cli.ExitFailure
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.Progress = env.Stdout
	rep := Run(ctx, o.Config)
	printReport(env.Stdout, &rep)
	if o.JSON != "" {
		if err := writeJSON(o.JSON, &rep); err != nil {
			fmt.Fprintf(env.Stderr, "oncemq torture: write the JSON report: %v\n", err)
			return cli.ExitFailure
		}
	}
	if !rep.Pass {
		return cli.ExitFailure
	}
	return cli.ExitOK
}

func writeJSON(path string, rep *Report) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
