package torture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// torture is one run. Its phases are methods, called in order by run: startBroker, subscribe,
// publish (with the killer), drain, finalKill, then finish (the check).
type torture struct {
	cfg Config

	outMu sync.Mutex
	out   io.Writer

	start    time.Time
	progress atomic.Int64 // PUBRECs received by publishers + first deliveries counted by subscribers
	progAt   atomic.Int64 // when progress last grew, unix nanoseconds
	runs     atomic.Int64 // the broker's run number
	broker   *brokerChild

	mu       sync.Mutex // guards the following
	died     string     // how the broker died on its own
	killLog  []KillRecord
	failures []string // run-time failures other than the counts (restart failed, setup...)
}

// clients are the publishers and subscribers of a run and the goroutines that run them.
type clients struct {
	ctx    context.Context // ends them
	stop   context.CancelFunc
	subs   []*subscriber
	pubs   []*publisher
	subsWG sync.WaitGroup
	pubsWG sync.WaitGroup
}

// wait stops every client and waits for them.
func (c *clients) wait() {
	c.stop()
	c.subsWG.Wait()
	c.pubsWG.Wait()
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

// newReport is the report's configuration part.
func (t *torture) newReport() *Report {
	cfg := t.cfg
	rep := &Report{
		Seed: cfg.Seed, Publishers: cfg.Publishers, Subscribers: cfg.Subscribers,
		TakeoverSubscribers: cfg.TakeoverSubscribers, MessagesPerPub: cfg.Messages, Window: cfg.Window,
		PayloadSize: cfg.PayloadSize, Sync: cfg.Sync, Binary: cfg.Binary, KillsRequested: cfg.Kills,
		QoS: cfg.QoS, PublisherAmnesia: cfg.PublisherAmnesia, DedupOff: cfg.DedupOff, Shared: cfg.Shared,
	}
	if cfg.Shared > 1 && cfg.LeaveEvery > 0 {
		rep.LeaveEvery = cfg.LeaveEvery.String()
	}
	if cfg.TakeoverEvery > 0 {
		rep.TakeoverEvery = cfg.TakeoverEvery.String()
	}
	return rep
}

// run performs the whole torture and returns its report.
func (t *torture) run(parent context.Context) *Report {
	cfg := t.cfg
	t.start = time.Now()
	rep := t.newReport()
	takeover := ""
	if cfg.TakeoverSubscribers > 0 {
		takeover = fmt.Sprintf(" + %d taken over every %v", cfg.TakeoverSubscribers, cfg.TakeoverEvery)
	}
	amnesia, dedup := "", ""
	if cfg.PublisherAmnesia {
		amnesia = " with amnesia"
	}
	if cfg.DedupOff {
		dedup = ", dedup off"
	}
	if cfg.Shared > 0 {
		takeover = fmt.Sprintf(" + %d members of one shared subscription group", cfg.Shared)
		if cfg.Shared > 1 && cfg.LeaveEvery > 0 {
			takeover += fmt.Sprintf(", one leaving about every %v", cfg.LeaveEvery)
		}
	}
	t.logf("oncemq torture: %d publishers x %d messages at QoS %d%s, %d subscribers%s, window %d, %d kills, sync %s%s",
		cfg.Publishers, cfg.Messages, cfg.QoS, amnesia, cfg.Subscribers, takeover, cfg.Window, cfg.Kills, cfg.Sync, dedup)
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
	defer func() {
		if cfg.Keep || !rep.Pass {
			rep.TempDir = tmp
			return
		}
		os.RemoveAll(tmp)
	}()
	if !t.startBroker(ctx, abort, tmp) {
		shutdown := ""
		if t.broker != nil {
			defer t.broker.close()
			shutdown = t.broker.stop()
		}
		return t.finish(rep, nil, nil, nil, shutdown)
	}
	defer t.broker.close()

	cl := t.newClients(ctx)
	defer cl.stop()
	if !t.subscribe(ctx, cl) {
		cl.wait()
		return t.finish(rep, cl.subs, nil, nil, t.broker.stop())
	}
	exp := t.publishAndDrain(ctx, cl, rep)
	rep.DurationSeconds = time.Since(t.start).Seconds()

	cl.wait()
	shutdown := t.broker.stop()
	if parent.Err() != nil {
		t.fail("interrupted")
	} else if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.fail("timeout: the run took longer than --timeout %v", cfg.Timeout)
	}
	return t.finish(rep, cl.subs, cl.pubs, exp, shutdown)
}

// startBroker starts the broker on a free port with its data and log in tmp, and aborts the run if
// it ever dies on its own. False if it could not start.
func (t *torture) startBroker(ctx context.Context, abort context.CancelFunc, tmp string) bool {
	cfg := t.cfg
	port, err := freeLoopbackPort()
	if err != nil {
		t.fail("find a free port: %v", err)
		return false
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	maxQueued := max(10000, 2*cfg.Publishers*cfg.Messages) // a full queue drops on purpose; this run must not
	b, err := newBrokerChild(cfg.Binary, addr, filepath.Join(tmp, "data"), cfg.Sync, cfg.BrokerLogLevel, maxQueued,
		cfg.DedupOff, filepath.Join(tmp, "broker.log"))
	if err != nil {
		t.fail("broker log: %v", err)
		return false
	}
	t.broker = b
	t.logf("broker %s on %s, data and log in %s", cfg.Binary, addr, tmp)
	t.runs.Store(1)
	if err := b.start(ctx); err != nil {
		t.fail("start the broker: %v", err)
		return false
	}
	go func() {
		select {
		case how := <-b.died:
			t.mu.Lock()
			t.died = how
			t.mu.Unlock()
			t.logf("broker died on its own at %v: %s", t.since().Round(time.Millisecond), how)
			abort()
		case <-ctx.Done():
		}
	}()
	return true
}

// newClients makes the run's subscribers (the plain ones, then those taken over) and publishers.
func (t *torture) newClients(ctx context.Context) *clients {
	cfg := t.cfg
	env := &clientEnv{
		addr:     t.broker.addr,
		start:    t.start,
		progress: func() { t.progress.Add(1); t.progAt.Store(time.Now().UnixNano()) },
		run:      func() int { return int(t.runs.Load()) },
	}
	seed := uint64(cfg.Seed)
	cl := &clients{}
	cl.ctx, cl.stop = context.WithCancel(ctx)
	for i := range cfg.Subscribers {
		cl.subs = append(cl.subs, newSubscriber(env, fmt.Sprintf("sub%d", i+1), fmt.Sprintf("torture-sub-%d", i+1), 0,
			cfg.ReceiveMaximum, cfg.Publishers, cfg.Messages, seed, i))
	}
	for i := range cfg.TakeoverSubscribers {
		cl.subs = append(cl.subs, newSubscriber(env, fmt.Sprintf("takeover%d", i+1), fmt.Sprintf("torture-takeover-%d", i+1),
			cfg.TakeoverEvery, cfg.ReceiveMaximum, cfg.Publishers, cfg.Messages, seed, cfg.Subscribers+i))
	}
	if cfg.Shared > 0 {
		g := &shareGroup{}
		if cfg.Shared > 1 {
			g.leaveEvery = cfg.LeaveEvery
		}
		for i := range cfg.Shared {
			m := newSubscriber(env, fmt.Sprintf("member%d", i+1), fmt.Sprintf("torture-member-%d", i+1), 0,
				cfg.ReceiveMaximum, cfg.Publishers, cfg.Messages, seed, i)
			m.group = g
			cl.subs = append(cl.subs, m)
		}
	}
	for _, s := range cl.subs {
		s.pubQoS = cfg.QoS
	}
	cl.pubs = make([]*publisher, cfg.Publishers)
	for i := range cl.pubs {
		cl.pubs[i] = newPublisher(env, i, cfg.Messages, cfg.Window, cfg.PayloadSize, seed)
		cl.pubs[i].qos, cl.pubs[i].amnesia = cfg.QoS, cfg.PublisherAmnesia
	}
	return cl
}

// subscribe starts the subscribers first, so that their sessions and subscriptions exist before the
// first PUBLISH, and waits until each has its SUBACK. False if one does not.
func (t *torture) subscribe(ctx context.Context, cl *clients) bool {
	for _, s := range cl.subs {
		cl.subsWG.Add(1)
		go func() { defer cl.subsWG.Done(); s.run(cl.ctx) }()
	}
	setupDeadline := time.After(brokerAcceptWait)
	for _, s := range cl.subs {
		select {
		case <-s.ready:
			continue
		case <-ctx.Done():
		case <-setupDeadline:
			st := s.state(&expectation{})
			t.fail("%s not subscribed after %v: %v", s.res.Name, brokerAcceptWait, st.fatal)
		}
		return false
	}
	return true
}
