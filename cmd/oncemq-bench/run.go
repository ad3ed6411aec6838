package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/paho"
)

// Result is the outcome of one message workload.
type Result struct {
	Broker         string  `json:"broker,omitempty"`
	Workload       string  `json:"workload"`
	QoS            int     `json:"qos"`
	Publishers     int     `json:"publishers"`
	Subscribers    int     `json:"subscribers"`
	PayloadBytes   int     `json:"payload_bytes"`
	Window         int     `json:"window"`
	TargetRate     float64 `json:"target_rate,omitempty"`
	Published      int64   `json:"published"` // acknowledged publishes (written, for QoS 0)
	PublishErrors  int64   `json:"publish_errors"`
	FirstError     string  `json:"first_error,omitempty"`
	Expected       int64   `json:"expected"` // published x subscribers
	Received       int64   `json:"received"` // deliveries of expected messages, duplicates included
	Distinct       int64   `json:"distinct"`
	Lost           int64   `json:"lost"`
	Duplicates     int64   `json:"duplicates"`
	Unexpected     int64   `json:"unexpected,omitempty"` // deliveries of failed publishes
	Invalid        int64   `json:"invalid,omitempty"`    // deliveries not from this run
	PublishSeconds float64 `json:"publish_seconds"`
	DeliverSeconds float64 `json:"deliver_seconds"` // first publish to last delivery
	PublishRate    float64 `json:"publish_msgs_per_s"`
	DeliverRate    float64 `json:"delivered_msgs_per_s"`
	Latency        Latency `json:"latency"`
	DrainTimedOut  bool    `json:"drain_timed_out,omitempty"`
	TimeCapped     bool    `json:"time_capped,omitempty"` // --duration ended publishing before --count
	Stalled        bool    `json:"stalled,omitempty"`     // a publish was not acknowledged within the packet timeout
	Error          string  `json:"error,omitempty"`       // the run could not be done
	Missing        string  `json:"missing,omitempty"`     // compare: the broker is not installed
}

// violations lists what makes the result a failure: for QoS 2 any loss or duplicate, for QoS 1/2
// any failed publish, and a run that could not be done.
func (r *Result) violations() []string {
	var v []string
	if r.Error != "" {
		v = append(v, "run failed: "+r.Error)
	}
	switch {
	case r.QoS == 2 && r.Lost > 0 && r.DrainTimedOut:
		v = append(v, fmt.Sprintf("QoS 2: %d of %d messages NOT DELIVERED within the drain timeout (lost, or very late)", r.Lost, r.Expected))
	case r.QoS == 2 && r.Lost > 0:
		v = append(v, fmt.Sprintf("QoS 2 LOST %d of %d messages", r.Lost, r.Expected))
	}
	if r.QoS == 2 && r.Duplicates > 0 {
		v = append(v, fmt.Sprintf("QoS 2 DUPLICATED %d messages", r.Duplicates))
	}
	if r.QoS > 0 && r.PublishErrors > 0 {
		v = append(v, fmt.Sprintf("%d publishes FAILED (first: %s)", r.PublishErrors, r.FirstError))
	}
	return v
}

// runConfig is everything one message run needs.
type runConfig struct {
	Addr     string
	Workload workload
	Load     loadParams
	Prefix   string    // topic prefix; empty: bench/RANDOM
	Progress io.Writer // nil: quiet
	Label    string    // names the run in the progress line
}

// runState is shared by the publishers and subscribers of one run.
type runState struct {
	epoch      time.Time // send times in payloads are ns since this
	tag        uint16
	pubs       int
	distinct   atomic.Int64 // first deliveries
	deliveries atomic.Int64 // valid deliveries, duplicates included
	lastDeliv  atomic.Int64 // ns since epoch of the latest delivery
	stop       atomic.Bool  // publishers stop: --duration is up, or the broker stalled
	stalled    atomic.Bool  // a publish was not acknowledged within the packet timeout
}

// subscriber records what one subscribing client received.
type subscriber struct {
	st        *runState
	mu        sync.Mutex
	tally     *tally
	latencies []int64 // ns, one per delivery
	invalid   int64
}

func (s *subscriber) onPublish(pr paho.PublishReceived) (bool, error) {
	now := time.Since(s.st.epoch).Nanoseconds()
	h, ok := decodePayload(pr.Packet.Payload)
	s.mu.Lock()
	if !ok || h.Tag != s.st.tag || int(h.Pub) >= s.st.pubs {
		s.invalid++
		s.mu.Unlock()
		return true, nil
	}
	n := s.tally.add(h.Pub, h.Seq)
	s.latencies = append(s.latencies, now-h.Sent)
	s.mu.Unlock()
	if n == 1 {
		s.st.distinct.Add(1)
	}
	s.st.deliveries.Add(1)
	s.st.lastDeliv.Store(now)
	return true, nil
}

// publisher is one publishing client and what became of its publishes.
type publisher struct {
	id     uint16
	client *paho.Client
	topic  string
	limit  int // messages to publish; 0: until stopped

	next  atomic.Int64 // next sequence number to claim
	acked atomic.Int64

	mu       sync.Mutex
	failed   map[uint32]bool
	firstErr error
}

// sent is how many sequence numbers were attempted, once the workers have returned.
func (p *publisher) sent() int {
	n := int(p.next.Load())
	if p.limit > 0 {
		n = min(n, p.limit)
	}
	return n
}

func (p *publisher) fail(seq int64, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failed[uint32(seq)] = true
	if p.firstErr == nil {
		p.firstErr = err
	}
}

// work publishes claimed sequence numbers one at a time until the limit, st.stop or ctx; Window
// workers per publisher make its in-flight window. With a target rate, sequence n of this
// publisher is due at start + n*interval. A publish not acknowledged within the packet timeout
// means the broker stalled: every publisher stops, rather than wait the timeout again and again.
func (p *publisher) work(ctx context.Context, st *runState, wl workload, size int, start time.Time, interval time.Duration) {
	for !st.stop.Load() && ctx.Err() == nil {
		n := p.next.Add(1) - 1
		if p.limit > 0 && n >= int64(p.limit) {
			return
		}
		if interval > 0 {
			if !sleepUntil(ctx, start.Add(time.Duration(n)*interval)) {
				p.fail(n, ctx.Err())
				return
			}
		}
		payload := encodePayload(msgHeader{Tag: st.tag, Pub: p.id, Seq: uint32(n), Sent: time.Since(st.epoch).Nanoseconds()}, size)
		resp, err := p.client.Publish(ctx, &paho.Publish{Topic: p.topic, QoS: wl.QoS, Payload: payload})
		if err == nil && resp != nil && resp.ReasonCode >= 0x80 {
			// paho v0.23.0 returns a nil error for a refused QoS 2 publish (PUBREC >= 0x80).
			err = fmt.Errorf("reason code 0x%02x", resp.ReasonCode)
		}
		if err != nil {
			p.fail(n, err)
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				st.stalled.Store(true)
				st.stop.Store(true)
			}
			continue
		}
		p.acked.Add(1)
	}
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// ackTimeout is how long a publisher waits for a QoS 1/2 acknowledgement before it calls the broker
// stalled.
const ackTimeout = 15 * time.Second

// quietSpell ends the drain of a QoS 0 run, or of a broker that stalled, once nothing arrived for
// this long: lost QoS 0 messages never come, and neither do those of a deadlocked broker, so
// waiting the whole drain for them would only stretch the run.
const quietSpell = 2 * time.Second

// runWorkload connects the subscribers, then the publishers, publishes, waits for delivery and
// counts. An error means the run could not be done (a client could not connect or subscribe);
// losses and duplicates are in the Result.
func runWorkload(ctx context.Context, cfg runConfig) (*Result, error) {
	wl, load := cfg.Workload, cfg.Workload.params(cfg.Load)
	res := &Result{
		Workload: wl.Name, QoS: int(wl.QoS), Publishers: wl.Pubs, Subscribers: wl.Subs,
		PayloadBytes: load.Size, Window: load.Window, TargetRate: load.Rate,
	}
	runID := randomHex(4)
	prefix := cfg.Prefix
	if prefix == "" {
		prefix = "bench/" + runID
	}
	st := &runState{epoch: time.Now(), tag: uint16(randomUint32()), pubs: wl.Pubs}
	g := &clientGroup{}
	defer g.disconnect()

	// Subscribers first, each subscribed before any publisher connects.
	subs, err := connectSubscribers(ctx, cfg, st, g, runID, prefix)
	if err != nil {
		return res, err
	}
	pubs, err := connectPublishers(ctx, cfg, g, runID, prefix)
	if err != nil {
		return res, err
	}
	expectedSoFar := func() int64 { return ackedTotal(pubs) * int64(wl.Subs) }
	prog := startProgress(cfg.Progress, cfg.Label, func() (int64, string) {
		delivered := st.deliveries.Load()
		return delivered, fmt.Sprintf("published %d, delivered %d of %d", ackedTotal(pubs), delivered, expectedSoFar())
	})
	defer prog.stop()

	start := time.Now()
	publishAll(ctx, cfg, st, pubs, start)
	publishEnd := time.Now()
	res.DrainTimedOut, err = drain(ctx, st, wl, load, expectedSoFar(), publishEnd)
	prog.stop()
	if err != nil {
		return res, err
	}
	res.count(st, subs, pubs, g)
	res.TimeCapped = load.Count > 0 && !res.Stalled && ctx.Err() == nil && res.Published+res.PublishErrors < int64(load.Count)
	res.setRates(st, start, publishEnd)
	return res, nil
}

// clientGroup is the clients of one run and the errors paho reported on them.
type clientGroup struct {
	clients  []*paho.Client
	errs     atomic.Int64
	firstErr atomic.Value // string
}

func (g *clientGroup) onError(err error) {
	g.errs.Add(1)
	g.firstErr.CompareAndSwap(nil, err.Error())
}

func (g *clientGroup) disconnect() {
	for _, c := range g.clients {
		disconnectClient(c)
	}
}

// connectSubscribers connects the run's subscribers; each has its subscription to PREFIX/#
// granted at the workload's QoS before the next connects.
func connectSubscribers(ctx context.Context, cfg runConfig, st *runState, g *clientGroup, runID, prefix string) ([]*subscriber, error) {
	wl, load := cfg.Workload, cfg.Load
	subs := make([]*subscriber, wl.Subs)
	for i := range subs {
		s := &subscriber{st: st, tally: newTally(wl.Pubs)}
		subs[i] = s
		c, err := connectClient(ctx, cfg.Addr, clientOptions{
			ID: fmt.Sprintf("bench-%s-s%d", runID, i), SessionExpiry: load.SessionExpiry,
			ReceiveMax: load.ReceiveMax, PacketTimeout: ackTimeout, OnPublish: s.onPublish, OnError: g.onError,
		})
		if err != nil {
			return nil, err
		}
		g.clients = append(g.clients, c)
		sa, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: prefix + "/#", QoS: wl.QoS}}})
		if err != nil {
			return nil, fmt.Errorf("subscriber %d: subscribe: %w", i, err)
		}
		if len(sa.Reasons) != 1 || sa.Reasons[0] != wl.QoS {
			return nil, fmt.Errorf("subscriber %d: SUBACK reason codes %v, want granted QoS %d", i, sa.Reasons, wl.QoS)
		}
	}
	return subs, nil
}

// connectPublishers connects the run's publishers, each with its share of --count and its own
// topic PREFIX/pN.
func connectPublishers(ctx context.Context, cfg runConfig, g *clientGroup, runID, prefix string) ([]*publisher, error) {
	wl, load := cfg.Workload, cfg.Load
	pubs := make([]*publisher, wl.Pubs)
	for i := range pubs {
		c, err := connectClient(ctx, cfg.Addr, clientOptions{
			ID: fmt.Sprintf("bench-%s-p%d", runID, i), SessionExpiry: load.SessionExpiry,
			PacketTimeout: ackTimeout, OnError: g.onError,
		})
		if err != nil {
			return nil, err
		}
		g.clients = append(g.clients, c)
		pubs[i] = &publisher{
			id: uint16(i), client: c, topic: fmt.Sprintf("%s/p%d", prefix, i),
			limit: perPublisher(load.Count, wl.Pubs, i), failed: map[uint32]bool{},
		}
	}
	return pubs, nil
}

// ackedTotal is how many publishes the broker has acknowledged so far.
func ackedTotal(pubs []*publisher) int64 {
	var n int64
	for _, p := range pubs {
		n += p.acked.Load()
	}
	return n
}

// publishAll runs every publisher until its share is published, --duration is up, the broker
// stalled or ctx ends.
func publishAll(ctx context.Context, cfg runConfig, st *runState, pubs []*publisher, start time.Time) {
	wl, load := cfg.Workload, cfg.Load
	var interval time.Duration
	if load.Rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(wl.Pubs) / load.Rate)
	}
	if load.Duration > 0 {
		t := time.AfterFunc(load.Duration, func() { st.stop.Store(true) })
		defer t.Stop()
	}
	var wg sync.WaitGroup
	for _, p := range pubs {
		workers := load.Window
		if wl.QoS == 0 {
			workers = 1 // QoS 0 has nothing to wait for: one writer per client keeps order
		}
		for range workers {
			wg.Go(func() { p.work(ctx, st, wl, load.Size, start, interval) })
		}
	}
	wg.Wait()
}

// drain waits for every expected message (and then the settle time), the drain timeout, or, for
// QoS 0 or a stalled broker, a quiet spell. It reports whether the drain timed out.
func drain(ctx context.Context, st *runState, wl workload, load loadParams, expected int64, publishEnd time.Time) (bool, error) {
	deadline := publishEnd.Add(load.Drain)
	lastCount, lastChange := st.deliveries.Load(), time.Now()
	for {
		if st.distinct.Load() >= expected {
			sleepUntil(ctx, time.Now().Add(load.Settle)) // late duplicates show up here
			return false, nil
		}
		if time.Now().After(deadline) {
			return true, nil
		}
		if n := st.deliveries.Load(); n != lastCount {
			lastCount, lastChange = n, time.Now()
		} else if (wl.QoS == 0 || st.stalled.Load()) && time.Since(lastChange) > quietSpell {
			return false, nil
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// count fills in what was published, delivered, lost and duplicated, and the latencies.
func (res *Result) count(st *runState, subs []*subscriber, pubs []*publisher, g *clientGroup) {
	var total deliveryCount
	var samples []int64
	for _, s := range subs {
		s.mu.Lock()
		for i, p := range pubs {
			total.addCount(countDeliveries(s.tally.counts[i], p.sent(), p.failed))
		}
		samples = append(samples, s.latencies...)
		res.Invalid += s.invalid
		s.mu.Unlock()
	}
	for _, p := range pubs {
		p.mu.Lock()
		res.Published += p.acked.Load()
		res.PublishErrors += int64(len(p.failed))
		if p.firstErr != nil && res.FirstError == "" {
			res.FirstError = p.firstErr.Error()
		}
		p.mu.Unlock()
	}
	if res.FirstError == "" && g.errs.Load() > 0 {
		res.FirstError = fmt.Sprintf("client error: %v", g.firstErr.Load())
	}
	res.Expected, res.Received, res.Distinct, res.Unexpected = total.Expected, total.Received, total.Distinct, total.Unexpected
	res.Lost, res.Duplicates = total.Lost(), total.Duplicates()
	res.Latency = summarize(samples)
	res.Stalled = st.stalled.Load()
}

// setRates fills in the publish and delivery times and rates.
func (res *Result) setRates(st *runState, start, publishEnd time.Time) {
	res.PublishSeconds = publishEnd.Sub(start).Seconds()
	if res.PublishSeconds > 0 {
		res.PublishRate = float64(res.Published) / res.PublishSeconds
	}
	// Delivered rate: over the whole run, from the first publish to the last delivery or the end
	// of publishing, whichever is later (a broker that stalls must not look fast).
	res.DeliverSeconds = res.PublishSeconds
	if last := st.lastDeliv.Load(); last > 0 {
		res.DeliverSeconds = max(res.DeliverSeconds, (time.Duration(last) - start.Sub(st.epoch)).Seconds())
	}
	if res.DeliverSeconds > 0 {
		res.DeliverRate = float64(st.deliveries.Load()) / res.DeliverSeconds
	}
}

// cmdRun is `oncemq-bench run`.
func cmdRun(ctx context.Context, con console, args []string) (int, error) {
	f, err := parseRunFlags(args, con.out)
	if err != nil {
		return 2, err
	}
	out, err := outputDir(f.Out, "run")
	if err != nil {
		return 1, err
	}
	_ = raiseFileLimit(uint64(f.Workload.Pubs+f.Workload.Subs) + 256)
	cfg := runConfig{Addr: f.Addr, Workload: f.Workload, Load: f.Load, Prefix: f.Prefix, Label: f.Workload.Name}
	if !f.Quiet {
		cfg.Progress = con.err
	}
	res, err := runWorkload(ctx, cfg)
	if err != nil {
		res.Error = err.Error()
	}
	printResult(con.out, res)
	if err := saveResult(con, out, "run.json", res); err != nil {
		return 1, err
	}
	if v := res.violations(); len(v) > 0 {
		printViolations(con.err, []string{describeRun(res)}, [][]string{v})
		return 1, nil
	}
	return 0, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func randomUint32() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return binary.BigEndian.Uint32(b[:])
}
