package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func init() {
	register(command{name: "torture", summary: "kill -9 a child broker under QoS 2 load and check exactly-once delivery", run: runTorture})
}

// tortureConfig is the validated configuration of `oncemq torture`.
type tortureConfig struct {
	Publishers          int
	Subscribers         int
	Messages            int // per publisher
	Window              int // QoS 2 PUBLISHes in flight per publisher
	Kills               int
	Seed                int64
	Timeout             time.Duration // the whole run
	DrainTimeout        time.Duration // the drain gives up after this long without progress
	Settle              time.Duration // quiet time at the end, for late redeliveries
	FinalKill           bool
	Sync                string
	Binary              string
	BrokerLogLevel      string
	JSON                string
	TakeoverEvery       time.Duration
	TakeoverSubscribers int
	PayloadSize         int
	ReceiveMaximum      int // the subscribers'
	Keep                bool
}

const tortureUsage = `Usage: oncemq torture [flags]

Start the oncemq binary as a child process on a free loopback port and a fresh data directory, run
publishers and subscribers at QoS 2 with persistent sessions (each client keeps its own state across
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
	{"sync", "MODE", "passed to the broker: always or none (default always)"},
	{"binary", "PATH", "the oncemq binary to test (default: this one)"},
	{"broker-log-level", "LEVEL", "the broker's --log-level (default warn)"},
	{"json", "FILE", "also write the report as JSON to FILE"},
	{"keep", "", "keep the temporary directory (data, broker log) even if the run passes"},
}

func writeTortureUsage(w io.Writer) {
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

// parseTortureConfig parses the flags of `oncemq torture`; the error is flag.ErrHelp for -h.
func parseTortureConfig(args []string) (tortureConfig, error) {
	cfg := tortureConfig{
		Publishers: 4, Subscribers: 2, Messages: 2000, Window: 16, Kills: 10,
		Timeout: 10 * time.Minute, DrainTimeout: 30 * time.Second, Settle: 500 * time.Millisecond,
		FinalKill: true, Sync: "always", BrokerLogLevel: "warn", TakeoverSubscribers: 1,
		PayloadSize: 16, ReceiveMaximum: 64,
	}
	fs := flag.NewFlagSet("torture", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	intVar := func(p *int, names ...string) {
		for _, n := range names {
			fs.IntVar(p, n, *p, "")
		}
	}
	intVar(&cfg.Publishers, "publishers", "p")
	intVar(&cfg.Subscribers, "subscribers", "s")
	intVar(&cfg.Messages, "messages", "n")
	intVar(&cfg.Window, "window", "w")
	intVar(&cfg.Kills, "kills", "k")
	intVar(&cfg.TakeoverSubscribers, "takeover-subscribers")
	intVar(&cfg.PayloadSize, "payload")
	intVar(&cfg.ReceiveMaximum, "receive-maximum")
	fs.Int64Var(&cfg.Seed, "seed", 0, "")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "")
	fs.DurationVar(&cfg.DrainTimeout, "drain-timeout", cfg.DrainTimeout, "")
	fs.DurationVar(&cfg.Settle, "settle", cfg.Settle, "")
	fs.DurationVar(&cfg.TakeoverEvery, "takeover-every", 0, "")
	fs.BoolVar(&cfg.FinalKill, "final-kill", cfg.FinalKill, "")
	fs.BoolVar(&cfg.Keep, "keep", false, "")
	fs.StringVar(&cfg.Sync, "sync", cfg.Sync, "")
	fs.StringVar(&cfg.Binary, "binary", "", "")
	fs.StringVar(&cfg.BrokerLogLevel, "broker-log-level", cfg.BrokerLogLevel, "")
	fs.StringVar(&cfg.JSON, "json", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, err
		}
		msg := err.Error()
		if rest, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
			return cfg, fmt.Errorf("unknown flag %s", rest)
		}
		return cfg, errors.New(msg)
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	seedGiven := false
	fs.Visit(func(f *flag.Flag) { seedGiven = seedGiven || f.Name == "seed" })
	if !seedGiven {
		cfg.Seed = time.Now().UnixNano()
	}
	switch {
	case cfg.Publishers < 1:
		return cfg, errors.New("--publishers must be at least 1")
	case cfg.Subscribers < 0:
		return cfg, errors.New("--subscribers must not be negative")
	case cfg.Subscribers == 0 && cfg.TakeoverEvery <= 0:
		return cfg, errors.New("no subscriber: --subscribers 0 needs --takeover-every")
	case cfg.Messages < 1:
		return cfg, errors.New("--messages must be at least 1")
	case cfg.Window < 1 || cfg.Window > 65535:
		return cfg, errors.New("--window must be from 1 to 65535")
	case cfg.Kills < 0:
		return cfg, errors.New("--kills must not be negative")
	case cfg.Timeout <= 0 || cfg.DrainTimeout <= 0 || cfg.Settle < 0:
		return cfg, errors.New("--timeout and --drain-timeout must be positive, --settle not negative")
	case cfg.TakeoverEvery < 0:
		return cfg, errors.New("--takeover-every must not be negative")
	case cfg.TakeoverEvery > 0 && cfg.TakeoverSubscribers < 1:
		return cfg, errors.New("--takeover-subscribers must be at least 1")
	case cfg.PayloadSize < payloadHeader || cfg.PayloadSize > 1<<20:
		return cfg, fmt.Errorf("--payload must be from %d to %d bytes", payloadHeader, 1<<20)
	case cfg.ReceiveMaximum < 1 || cfg.ReceiveMaximum > 65535:
		return cfg, errors.New("--receive-maximum must be from 1 to 65535")
	case cfg.Sync != "always" && cfg.Sync != "none":
		return cfg, fmt.Errorf("invalid value %q for flag --sync: want always or none", cfg.Sync)
	}
	if _, err := parseLogLevel(cfg.BrokerLogLevel); err != nil {
		return cfg, fmt.Errorf("invalid value %q for flag --broker-log-level: %v", cfg.BrokerLogLevel, err)
	}
	if cfg.TakeoverEvery <= 0 {
		cfg.TakeoverSubscribers = 0
	}
	return cfg, nil
}

func parseLogLevel(v string) (string, error) {
	switch strings.ToLower(v) {
	case "debug", "info", "warn", "error":
		return strings.ToLower(v), nil
	}
	return "", errors.New("want debug, info, warn or error")
}

func runTorture(args []string) int {
	cfg, err := parseTortureConfig(args)
	if errors.Is(err, flag.ErrHelp) {
		writeTortureUsage(stdout)
		return 0
	}
	if err != nil {
		return usageError("oncemq torture", err.Error(), "oncemq torture --help")
	}
	if cfg.Binary == "" {
		if cfg.Binary, err = os.Executable(); err != nil {
			fmt.Fprintf(stderr, "oncemq torture: cannot find this binary (use --binary): %v\n", err)
			return 1
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	t := &torture{cfg: cfg, out: stdout}
	rep := t.run(ctx)
	t.printReport(rep)
	if cfg.JSON != "" {
		data, err := json.MarshalIndent(rep, "", "  ")
		if err == nil {
			err = os.WriteFile(cfg.JSON, append(data, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "oncemq torture: write the JSON report: %v\n", err)
			return 1
		}
	}
	if !rep.Pass {
		return 1
	}
	return 0
}

// torture is one run.
type torture struct {
	cfg tortureConfig

	outMu sync.Mutex
	out   io.Writer

	start    time.Time
	progress atomic.Int64 // PUBRECs received by publishers + first deliveries counted by subscribers
	progAt   atomic.Int64 // when progress last grew, unix nanoseconds
	runs     atomic.Int64 // the broker's run number
	broker   *childBroker

	mu       sync.Mutex // guards the following
	died     string     // how the broker died on its own
	killLog  []killRecord
	failures []string // run-time failures other than the counts (restart failed, setup...)
}

// killRecord is one SIGKILL of the broker.
type killRecord struct {
	N          int     `json:"n"`
	AtSeconds  float64 `json:"at_seconds"`
	Progress   int64   `json:"progress"`
	DownMillis float64 `json:"down_ms"` // from SIGKILL to accepting connections again
	Final      bool    `json:"final,omitempty"`
}

// tortureReport is the result of a run; the JSON report is this.
type tortureReport struct {
	Pass     bool     `json:"pass"`
	Failures []string `json:"failures,omitempty"`
	Warnings []string `json:"warnings,omitempty"`

	Seed                int64   `json:"seed"`
	Publishers          int     `json:"publishers"`
	Subscribers         int     `json:"subscribers"`
	TakeoverSubscribers int     `json:"takeover_subscribers"`
	TakeoverEvery       string  `json:"takeover_every,omitempty"`
	MessagesPerPub      int     `json:"messages_per_publisher"`
	Window              int     `json:"window"`
	PayloadSize         int     `json:"payload_bytes"`
	Sync                string  `json:"sync"`
	Binary              string  `json:"binary"`
	KillsRequested      int     `json:"kills_requested"`
	Kills               int     `json:"kills"`
	Restarts            int     `json:"restarts"`
	BrokerDied          string  `json:"broker_died,omitempty"`
	DurationSeconds     float64 `json:"duration_seconds"`
	PublishSeconds      float64 `json:"publish_seconds"`
	DrainSeconds        float64 `json:"drain_seconds"`         // from the publishers' end to the last first delivery
	MessagesPerSecond   float64 `json:"messages_per_second"`   // acknowledged publishes / publish time
	DeliveriesPerSecond float64 `json:"deliveries_per_second"` // counted deliveries / (publish + drain seconds)
	TempDir             string  `json:"temp_dir,omitempty"`    // kept: data and broker.log

	Totals          subscriberResult   `json:"totals"`
	SubscriberLines []subscriberResult `json:"subscriber_results"`
	PublisherLines  []publisherResult  `json:"publisher_results"`
	KillLog         []killRecord       `json:"kill_log"`
	BrokerLogTail   string             `json:"broker_log_tail,omitempty"`
}

func (t *torture) logf(format string, args ...any) {
	t.outMu.Lock()
	defer t.outMu.Unlock()
	fmt.Fprintf(t.out, format+"\n", args...)
}

func (t *torture) fail(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failures = append(t.failures, fmt.Sprintf(format, args...))
}

func (t *torture) since() time.Duration { return time.Since(t.start) }

// run performs the whole torture and returns its report.
func (t *torture) run(parent context.Context) *tortureReport {
	cfg := t.cfg
	t.start = time.Now()
	rep := &tortureReport{
		Seed: cfg.Seed, Publishers: cfg.Publishers, Subscribers: cfg.Subscribers,
		TakeoverSubscribers: cfg.TakeoverSubscribers, MessagesPerPub: cfg.Messages, Window: cfg.Window,
		PayloadSize: cfg.PayloadSize, Sync: cfg.Sync, Binary: cfg.Binary, KillsRequested: cfg.Kills,
	}
	if cfg.TakeoverEvery > 0 {
		rep.TakeoverEvery = cfg.TakeoverEvery.String()
	}
	takeover := ""
	if cfg.TakeoverSubscribers > 0 {
		takeover = fmt.Sprintf(" + %d taken over every %v", cfg.TakeoverSubscribers, cfg.TakeoverEvery)
	}
	t.logf("oncemq torture: %d publishers x %d messages, %d subscribers%s, window %d, %d kills, sync %s",
		cfg.Publishers, cfg.Messages, cfg.Subscribers, takeover, cfg.Window, cfg.Kills, cfg.Sync)
	t.logf("seed %d (replay with --seed %d)", cfg.Seed, cfg.Seed)

	ctx, cancelTimeout := context.WithTimeout(parent, cfg.Timeout)
	defer cancelTimeout()
	ctx, abort := context.WithCancel(ctx)
	defer abort()

	tmp, err := os.MkdirTemp("", "oncemq-torture-")
	if err != nil {
		t.fail("create the temporary directory: %v", err)
		return t.finish(rep, nil, nil, nil, "")
	}
	keep := cfg.Keep
	defer func() {
		if keep || !rep.Pass {
			rep.TempDir = tmp
			return
		}
		os.RemoveAll(tmp)
	}()
	port, err := freeLoopbackPort()
	if err != nil {
		t.fail("find a free port: %v", err)
		return t.finish(rep, nil, nil, nil, "")
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	total := cfg.Publishers * cfg.Messages
	maxQueued := max(10000, 2*total) // a full queue drops on purpose; this run must not
	t.broker, err = newChildBroker(cfg.Binary, addr, filepath.Join(tmp, "data"), cfg.Sync, cfg.BrokerLogLevel, maxQueued,
		filepath.Join(tmp, "broker.log"))
	if err != nil {
		t.fail("broker log: %v", err)
		return t.finish(rep, nil, nil, nil, "")
	}
	defer t.broker.close()
	t.logf("broker %s on %s, data and log in %s", cfg.Binary, addr, tmp)
	t.runs.Store(1)
	if err := t.broker.start(ctx); err != nil {
		t.fail("start the broker: %v", err)
		return t.finish(rep, nil, nil, nil, t.broker.stop())
	}
	go func() {
		select {
		case how := <-t.broker.died:
			t.mu.Lock()
			t.died = how
			t.mu.Unlock()
			t.logf("broker died on its own at %v: %s", t.since().Round(time.Millisecond), how)
			abort()
		case <-ctx.Done():
		}
	}()

	env := &clientEnv{
		addr:     addr,
		start:    t.start,
		progress: func() { t.progress.Add(1); t.progAt.Store(time.Now().UnixNano()) },
		run:      func() int { return int(t.runs.Load()) },
	}
	seed := uint64(cfg.Seed)
	var subs []*subscriber
	for i := range cfg.Subscribers {
		subs = append(subs, newSubscriber(env, fmt.Sprintf("sub%d", i+1), fmt.Sprintf("torture-sub-%d", i+1), 0,
			cfg.ReceiveMaximum, cfg.Publishers, cfg.Messages, seed, i))
	}
	for i := range cfg.TakeoverSubscribers {
		subs = append(subs, newSubscriber(env, fmt.Sprintf("takeover%d", i+1), fmt.Sprintf("torture-takeover-%d", i+1),
			cfg.TakeoverEvery, cfg.ReceiveMaximum, cfg.Publishers, cfg.Messages, seed, cfg.Subscribers+i))
	}
	pubs := make([]*publisher, cfg.Publishers)
	for i := range pubs {
		pubs[i] = newPublisher(env, i, cfg.Messages, cfg.Window, cfg.PayloadSize, seed)
	}

	// Subscribers first: their sessions and subscriptions exist before the first PUBLISH.
	clientCtx, stopClients := context.WithCancel(ctx)
	defer stopClients()
	var subsWG sync.WaitGroup
	for _, s := range subs {
		subsWG.Add(1)
		go func() { defer subsWG.Done(); s.run(clientCtx) }()
	}
	setupDeadline := time.After(brokerAcceptWait)
	for _, s := range subs {
		select {
		case <-s.ready:
			continue
		case <-ctx.Done():
		case <-setupDeadline:
			st := s.state(&expectation{})
			t.fail("%s not subscribed after %v: %v", s.res.Name, brokerAcceptWait, st.fatal)
		}
		stopClients()
		subsWG.Wait()
		return t.finish(rep, subs, nil, nil, t.broker.stop())
	}

	// The killer and the publishers.
	totalProgress := int64(total) * int64(1+len(subs))
	thresholds := t.killMoments(totalProgress)
	killerCtx, stopKiller := context.WithCancel(ctx)
	defer stopKiller()
	killerDone := make(chan struct{})
	go func() { defer close(killerDone); t.killer(killerCtx, thresholds, totalProgress) }()
	pubStart := time.Now()
	var pubsWG sync.WaitGroup
	for _, p := range pubs {
		pubsWG.Add(1)
		go func() { defer pubsWG.Done(); p.run(clientCtx) }()
	}
	pubsDone := make(chan struct{})
	go func() { pubsWG.Wait(); close(pubsDone) }()
	select {
	case <-pubsDone:
	case <-ctx.Done():
	}
	pubEnd := time.Now()
	rep.PublishSeconds = pubEnd.Sub(pubStart).Seconds()
	if ctx.Err() == nil {
		t.logf("publishers done at %v: %d messages in %.2fs", t.since().Round(time.Millisecond), total, rep.PublishSeconds)
	}

	// Drain: wait until every subscriber has every message, or for no progress.
	var exp *expectation
	drained := false
	if ctx.Err() == nil {
		exp = expectationOf(pubs) // the publishers are done
		drained = t.drain(ctx, subs, exp, true, nil)
	}
	// The drain lasted until the last first delivery; the rate counts the deliveries up to then.
	lastProgress := time.Unix(0, t.progAt.Load())
	rep.DrainSeconds = max(lastProgress.Sub(pubEnd).Seconds(), 0)

	// Every kill moment has passed if the progress reached the last one; then the killer finishes
	// its last restart. Otherwise (lost messages, refusals) some moments never come.
	if n := len(thresholds); n > 0 && t.progress.Load() < thresholds[n-1] {
		stopKiller()
	}
	select {
	case <-killerDone:
	case <-ctx.Done():
		stopKiller()
		<-killerDone
	}

	// The end: kill once more, so that every subscriber resumes its session on a broker that
	// recovered the final state, then wait for quiet. A redelivery counted now is a duplicate. If
	// the drain gave up, messages are missing: only wait for the resumption and quiet.
	if ctx.Err() == nil && exp != nil {
		var before []int
		if cfg.Kills > 0 && cfg.FinalKill {
			for _, s := range subs {
				before = append(before, s.state(exp).connections)
			}
			t.kill(ctx, totalProgress, true)
		}
		resumed := func(st []subscriberState) bool {
			for i := range before {
				if st[i].connections <= before[i] {
					return false
				}
			}
			return true
		}
		if !t.drain(ctx, subs, exp, drained, resumed) && ctx.Err() == nil && !resumed(t.states(subs, exp)) {
			t.fail("not every subscriber resumed its session after the final restart")
		}
	}
	rep.DurationSeconds = time.Since(t.start).Seconds()

	stopClients()
	subsWG.Wait()
	pubsWG.Wait()
	shutdown := t.broker.stop()
	if parent.Err() != nil {
		t.fail("interrupted")
	} else if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.fail("timeout: the run took longer than --timeout %v", cfg.Timeout)
	}
	return t.finish(rep, subs, pubs, exp, shutdown)
}

// killMoments draws cfg.Kills progress thresholds (acknowledged publishes plus first deliveries)
// in the first 98% of totalProgress: the broker is killed when the progress passes each, so while
// messages flow, whatever the speed of the machine.
func (t *torture) killMoments(totalProgress int64) []int64 {
	rng := rand.New(rand.NewPCG(uint64(t.cfg.Seed), 0x6b696c6c))
	span := max(totalProgress-max(totalProgress/50, 1), 1)
	thresholds := make([]int64, t.cfg.Kills)
	for i := range thresholds {
		thresholds[i] = 1 + rng.Int64N(span)
	}
	slices.Sort(thresholds)
	return thresholds
}

// killer SIGKILLs and restarts the broker as the progress passes each threshold, after a random
// jitter of up to 5ms.
func (t *torture) killer(ctx context.Context, thresholds []int64, totalProgress int64) {
	rng := rand.New(rand.NewPCG(uint64(t.cfg.Seed), 0x6a6974))
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for _, th := range thresholds {
		for t.progress.Load() < th {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
		select {
		case <-time.After(time.Duration(rng.Int64N(int64(5 * time.Millisecond)))):
		case <-ctx.Done():
			return
		}
		if !t.kill(ctx, totalProgress, false) {
			return
		}
	}
}

// kill is one SIGKILL and restart; false if the broker could not be restarted (the run is over).
func (t *torture) kill(ctx context.Context, totalProgress int64, final bool) bool {
	at := t.since()
	progress := t.progress.Load()
	begin := time.Now()
	if err := t.broker.kill(); err != nil {
		t.fail("kill the broker: %v", err)
		return false
	}
	t.runs.Add(1)
	err := t.broker.start(ctx)
	down := time.Since(begin)
	t.mu.Lock()
	rec := killRecord{N: len(t.killLog) + 1, AtSeconds: at.Seconds(), Progress: progress,
		DownMillis: float64(down.Microseconds()) / 1000, Final: final}
	t.killLog = append(t.killLog, rec)
	t.mu.Unlock()
	what := fmt.Sprintf("kill %d/%d", rec.N, t.cfg.Kills)
	if final {
		what = "final kill"
	}
	if err != nil {
		if ctx.Err() == nil {
			t.fail("restart the broker after %s: %v", what, err)
		}
		return false
	}
	t.logf("%s at %v (progress %d/%d): broker back in %v", what, at.Round(time.Millisecond), progress, totalProgress,
		down.Round(time.Millisecond))
	return true
}

// drain waits until every subscriber has every expected message and no acknowledgement pending (if
// complete), ready (if not nil) holds, and nothing was delivered for cfg.Settle. It returns false
// if ctx ended or cfg.DrainTimeout passed without progress first.
func (t *torture) drain(ctx context.Context, subs []*subscriber, exp *expectation, complete bool, ready func([]subscriberState) bool) bool {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	lastProgress, lastChange := t.progress.Load(), time.Now()
	for {
		states := t.states(subs, exp)
		done := ready == nil || ready(states)
		var lastPublish time.Time
		for _, st := range states {
			if complete && (st.missing > 0 || st.awaiting > 0) {
				done = false
			}
			if st.lastPublish.After(lastPublish) {
				lastPublish = st.lastPublish
			}
		}
		if done && time.Since(lastPublish) >= t.cfg.Settle {
			return true
		}
		if p := t.progress.Load(); p != lastProgress {
			lastProgress, lastChange = p, time.Now()
		} else if lastPublish.After(lastChange) {
			lastChange = lastPublish
		}
		if time.Since(lastChange) > t.cfg.DrainTimeout {
			t.logf("drain: no progress for %v; giving up", t.cfg.DrainTimeout)
			return false
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return false
		}
	}
}

func (t *torture) states(subs []*subscriber, exp *expectation) []subscriberState {
	states := make([]subscriberState, len(subs))
	for i, s := range subs {
		states[i] = s.state(exp)
	}
	return states
}

// expectationOf is what the publishers were promised: the messages acknowledged with a
// successful PUBREC. Call it once they have stopped.
func expectationOf(pubs []*publisher) *expectation {
	e := &expectation{refused: map[msgKey]byte{}}
	for _, p := range pubs {
		e.acked = append(e.acked, slices.Clone(p.acked))
		for k, code := range p.refused {
			e.refused[k] = code
		}
	}
	return e
}

// finish fills the report from the clients' state and decides the verdict.
func (t *torture) finish(rep *tortureReport, subs []*subscriber, pubs []*publisher, exp *expectation, shutdown string) *tortureReport {
	if exp == nil {
		exp = expectationOf(pubs) // the publishers have stopped
	}
	for _, p := range pubs {
		rep.PublisherLines = append(rep.PublisherLines, p.res)
	}
	tot := subscriberResult{Name: "total"}
	for _, s := range subs {
		r := s.result(exp)
		rep.SubscriberLines = append(rep.SubscriberLines, r)
		tot.Expected += r.Expected
		tot.Delivered += r.Delivered
		tot.Distinct += r.Distinct
		tot.Lost += r.Lost
		tot.Duplicated += r.Duplicated
		tot.Unexpected += r.Unexpected
		tot.Corrupt += r.Corrupt
		tot.SessionsLost += r.SessionsLost
		tot.ProtocolErrors += r.ProtocolErrors
		tot.Connections += r.Connections
		tot.Takeovers += r.Takeovers
		tot.TakenOverNoted += r.TakenOverNoted
		tot.Redeliveries += r.Redeliveries
		tot.AwaitingPubrel += r.AwaitingPubrel
	}
	rep.Totals = tot
	t.mu.Lock()
	rep.KillLog = slices.Clone(t.killLog)
	died := t.died
	failures := slices.Clone(t.failures)
	t.mu.Unlock()
	for _, k := range rep.KillLog {
		if !k.Final {
			rep.Kills++
		}
	}
	rep.Restarts = len(rep.KillLog)
	rep.BrokerDied = died
	if rep.DurationSeconds == 0 {
		rep.DurationSeconds = time.Since(t.start).Seconds()
	}
	if rep.PublishSeconds > 0 {
		rep.MessagesPerSecond = float64(t.cfg.Publishers*t.cfg.Messages) / rep.PublishSeconds
	}
	if d := rep.PublishSeconds + rep.DrainSeconds; d > 0 {
		rep.DeliveriesPerSecond = float64(tot.Delivered) / d
	}
	pass, why := verdict(rep.SubscriberLines, rep.PublisherLines, died, strings.Join(failures, "; "))
	if len(subs) == 0 && pass {
		pass, why = false, []string{"no subscriber ran"}
	}
	rep.Pass, rep.Failures = pass, why
	if rep.Kills < t.cfg.Kills && pass {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("only %d of %d kills happened", rep.Kills, t.cfg.Kills))
	}
	if shutdown != "" {
		rep.Warnings = append(rep.Warnings, "broker "+shutdown)
	}
	if tot.AwaitingPubrel > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d deliveries still await PUBREL at the end", tot.AwaitingPubrel))
	}
	if !pass && t.broker != nil {
		rep.BrokerLogTail = t.broker.tail(40)
	}
	return rep
}

// printReport writes the human report.
func (t *torture) printReport(rep *tortureReport) {
	t.outMu.Lock()
	defer t.outMu.Unlock()
	w := t.out
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-12s %9s %9s %9s %6s %10s %7s %8s %7s %9s %9s\n", "subscriber", "expected", "delivered", "distinct",
		"lost", "duplicated", "corrupt", "sessions", "proto", "connects", "takeovers")
	fmt.Fprintf(w, "%-12s %9s %9s %9s %6s %10s %7s %8s %7s %9s %9s\n", "", "", "", "", "", "", "", "lost", "errors", "", "")
	line := func(r subscriberResult) {
		fmt.Fprintf(w, "%-12s %9d %9d %9d %6d %10d %7d %8d %7d %9d %9d\n", r.Name, r.Expected, r.Delivered, r.Distinct,
			r.Lost, r.Duplicated, r.Corrupt, r.SessionsLost, r.ProtocolErrors, r.Connections, r.Takeovers)
	}
	for _, r := range rep.SubscriberLines {
		line(r)
	}
	line(rep.Totals)
	for _, r := range rep.SubscriberLines {
		if r.Lost > 0 {
			fmt.Fprintf(w, "  %s lost: %s\n", r.Name, sampleList(r.LostSample, r.Lost))
		}
		for _, d := range r.DupSample {
			fmt.Fprintf(w, "  %s duplicate: %s\n", r.Name, d)
		}
		for _, e := range r.ErrorSample {
			fmt.Fprintf(w, "  %s: %s\n", r.Name, e)
		}
	}
	var published, completed, refused, resentPub, resentRel, pubLost, pubErr int
	for _, p := range rep.PublisherLines {
		published += p.Messages
		completed += p.Completed
		refused += p.Refused
		resentPub += p.ResentPublish
		resentRel += p.ResentPubrel
		pubLost += p.SessionsLost
		pubErr += p.ProtocolErrors
	}
	fmt.Fprintf(w, "publishers: %d messages, %d completed, %d refused; resent %d PUBLISH and %d PUBREL; sessions lost %d, protocol errors %d\n",
		published, completed, refused, resentPub, resentRel, pubLost, pubErr)
	for _, p := range rep.PublisherLines {
		for _, e := range append(slices.Clone(p.RefusedSample), p.ErrorSample...) {
			fmt.Fprintf(w, "  %s: %s\n", p.Name, e)
		}
	}
	if rep.Totals.Takeovers > 0 {
		fmt.Fprintf(w, "takeovers: %d (DISCONNECT 0x8E seen on %d old connections)\n", rep.Totals.Takeovers, rep.Totals.TakenOverNoted)
	}
	died := "no"
	if rep.BrokerDied != "" {
		died = rep.BrokerDied
	}
	fmt.Fprintf(w, "broker: %d kills, %d restarts, died on its own: %s\n", rep.Kills, rep.Restarts, died)
	fmt.Fprintf(w, "duration %.2fs: publish %.2fs (%.0f msg/s acknowledged), drain %.2fs, %.0f deliveries/s\n",
		rep.DurationSeconds, rep.PublishSeconds, rep.MessagesPerSecond, rep.DrainSeconds, rep.DeliveriesPerSecond)
	for _, wn := range rep.Warnings {
		fmt.Fprintf(w, "warning: %s\n", wn)
	}
	if rep.BrokerLogTail != "" {
		fmt.Fprintf(w, "broker log (last lines):\n%s\n", rep.BrokerLogTail)
	}
	if rep.TempDir != "" {
		fmt.Fprintf(w, "kept %s (data/, broker.log)\n", rep.TempDir)
	}
	if rep.Pass {
		fmt.Fprintf(w, "PASS (seed %d)\n", rep.Seed)
		return
	}
	fmt.Fprintf(w, "FAIL (seed %d)\n", rep.Seed)
	for _, f := range rep.Failures {
		fmt.Fprintf(w, "  - %s\n", f)
	}
}
