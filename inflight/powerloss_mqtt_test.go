package inflight_test

// The power-loss test of the whole broker. A broker of package mqtt serves real MQTT clients on
// 127.0.0.1 while its journal writes the log through the power-loss disk of powerdisk_test.go
// (installed through export_test.go, which the product never compiles). Three QoS 2 publishers
// (two 5.0, one 3.1.1) and a QoS 1 one with dedup ids (5.0) send to a persistent 5.0 subscriber
// at QoS 2 and a persistent 3.1.1 subscriber at QoS 1. Power is lost live, at the Nth sync of the log (every commit boundary of
// the run, in turn) or at a random byte of a log write (torn there): from that moment nothing
// reaches the disk and no commit completes, so no acknowledgement it would release can leave.
// The broker is torn down, the data directory rebuilt as the loss left it (the bbolt copy of the
// last checkpoint; the log as synced, plus none, all or a torn part of the unsynced tail), and a
// second broker opens it. The clients, which did not lose power, reconnect with Clean Start 0
// and go on as real clients do: a publisher resends every PUBLISH without PUBREC with DUP=1 and
// every PUBREL without PUBCOMP, in order [MQTT-4.4.0-1]; a QoS 2 subscriber delivers a packet id
// to its application once until the PUBREL [MQTT-4.3.3-10].
//
// Checked at the end, over both broker lives: every message a publisher got PUBREC or PUBACK for
// before the loss (the broker took ownership [MQTT-4.3.3-8] [MQTT-4.3.2-4]), and every other one
// it sent (all are completed in the second life), reaches each subscriber's application: exactly
// once where it is delivered at QoS 2; at least once at QoS 1, any second copy a resend of the
// first (DUP=1 [MQTT-3.3.1-1], the same packet id), never a second routing; nothing reaches
// either that no publisher sent; and the store the second broker leaves passes
// mqtttest.CheckStore.

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/mqtt"
	"github.com/oncemq/oncemq/mqtt/mqtttest"
	"github.com/oncemq/oncemq/mqtt/mqtttest/rawpacket"
)

const (
	plMessages   = 14 // per publisher
	plWindow     = 4  // PUBLISHes a publisher has in flight
	plIDs        = 6  // packet ids a publisher uses, reused after PUBCOMP [MQTT-4.3.3-12]
	plCheckpoint = 4  // log records per checkpoint into bbolt: a run crosses many
	plExpiry     = 3600
	plWait       = 20 * time.Second // for what must happen; never reached when it does
	plFence      = "fence"
)

// plPoint is where a run loses power.
type plPoint struct {
	atSync int   // the log's Nth sync after the clients are set up; 0: not on syncs
	atByte int64 // the Nth byte written to the log after set-up; 0: not on bytes
	keep   func(unsynced int) int
	name   string
}

// The broker's power is lost at every commit boundary of a run (every sync of the log: the
// round's record is written and the sync never completes; the power loss drops that record, or
// keeps it whole) and at random bytes of the log's writes (the write torn there) with the
// unsynced tail dropped, kept or torn again; every message acknowledged before the loss is
// delivered exactly once.
func TestPowerLossDeliversEveryAcknowledgedMessageOnce_MQTT_4_3_3_8(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 8))
	t.Logf("seed %d", seed)

	// A first run loses power only at its end, after every flow completed; it also counts the
	// syncs and bytes of the log that the workload causes, which the other runs cut at.
	var syncs int
	var written int64
	t.Run("at the end", func(t *testing.T) {
		syncs, written = runPowerLoss(t, plPoint{keep: func(int) int { return 0 }})
	})
	if t.Failed() {
		return
	}
	if syncs < 10 {
		t.Fatalf("the workload made %d syncs of the log: too few for the test to mean anything", syncs)
	}
	var points []plPoint
	for n := 1; n <= syncs; n++ {
		points = append(points,
			plPoint{atSync: n, name: fmt.Sprintf("sync %d, unsynced tail dropped", n), keep: func(int) int { return 0 }},
			plPoint{atSync: n, name: fmt.Sprintf("sync %d, unsynced tail kept", n), keep: func(u int) int { return u }})
	}
	random := 40
	if testing.Short() {
		random = 10
	}
	for range random {
		b := 1 + rng.Int64N(written)
		switch rng.IntN(3) {
		case 0:
			points = append(points, plPoint{atByte: b, name: fmt.Sprintf("byte %d, unsynced tail dropped", b), keep: func(int) int { return 0 }})
		case 1:
			points = append(points, plPoint{atByte: b, name: fmt.Sprintf("byte %d, torn write kept", b), keep: func(u int) int { return u }})
		default:
			cut := rng.Float64()
			points = append(points, plPoint{atByte: b, name: fmt.Sprintf("byte %d, torn again at %.0f%% of the tail", b, 100*cut),
				keep: func(u int) int { return int(cut * float64(u)) }})
		}
	}
	for _, p := range points {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			runPowerLoss(t, p)
		})
	}
}

// runPowerLoss runs the workload with power lost at p, recovers, completes it and checks it. It
// returns the syncs and bytes of the log between the set-up and the loss.
func runPowerLoss(t *testing.T, p plPoint) (syncs int, written int64) {
	w := newPLWorkload()

	// Life 1: the broker on the recording disk, which loses power at p.
	b1 := startPLBroker(t, "first", plCheckpoint)
	conns, err := w.setUp(b1.addr)
	if err != nil {
		b1.disk.LoseNow("set-up failed")
		_ = b1.close(t)
		t.Fatal(err)
	}
	b1.disk.Arm(p.atSync, p.atByte)
	done := w.start(1, conns)
	select {
	case <-b1.disk.Lost():
	case <-done:
		b1.disk.LoseNow("the end of the run")
	case <-time.After(plWait):
		b1.disk.LoseNow("a timeout")
		t.Errorf("the first run neither completed nor lost power in %v", plWait)
	}
	w.stop(conns) // the clients' connections end with the broker's power
	syncs, written = b1.disk.Counts()
	_ = b1.close(t) // an error of the lost power, if any
	what, checkpoints, unsynced := b1.disk.Loss()
	keep := p.keep(unsynced)
	t.Logf("power lost at %s after %d bbolt commits, %d syncs and %d bytes of the log; %d of %d unsynced bytes kept; %d messages acknowledged",
		what, checkpoints, syncs, written, keep, unsynced, w.ackedCount())

	// Life 2: a broker on the files the loss left, with the same clients. It writes its log
	// through a recording disk too (no fsync, no preallocated 16 MiB), and the files it leaves
	// after a clean close are checked as the next start would read them.
	b2 := startPLBroker(t, "second", 0)
	if err := b1.disk.WriteLoss(b2.dataFile, keep); err != nil {
		t.Fatal(err)
	}
	if err := b2.start(); err != nil {
		t.Fatalf("the second broker does not start on what the power loss left: %v", err)
	}
	conns, err = w.resume(b2.addr)
	if err != nil {
		_ = b2.close(t)
		t.Fatal(err)
	}
	done = w.start(2, conns)
	select {
	case <-done:
	case <-time.After(plWait):
		t.Errorf("after the restart, the clients did not complete in %v", plWait)
	}
	w.stop(conns)
	if err := b2.close(t); err != nil {
		t.Errorf("the second broker's Close: %v", err)
	}
	b2.disk.LoseNow("after the second broker's close")
	w.check(t)
	left := filepath.Join(t.TempDir(), mqtt.DataFile)
	if err := b2.disk.WriteLoss(left, 0); err != nil {
		t.Fatal(err)
	}
	mqtttest.CheckStore(t, filepath.Dir(left))
	return syncs, written
}

// plBroker is one life of the broker, its log on a PowerDisk.
type plBroker struct {
	dataFile string
	disk     *inflight.PowerDisk
	logs     *inflight.LogBuffer
	srv      *mqtt.Server
	addr     string
}

// startPLBroker installs the disk of a broker in a new directory and, unless it is the second
// one (started by start once the files of the loss are there), starts it.
func startPLBroker(t *testing.T, name string, checkpointRecords int) *plBroker {
	b := &plBroker{dataFile: filepath.Join(t.TempDir(), mqtt.DataFile), logs: &inflight.LogBuffer{}}
	b.disk = inflight.InstallPowerDisk(b.dataFile, checkpointRecords)
	t.Cleanup(func() {
		b.disk.Remove()
		if t.Failed() {
			t.Logf("%s broker's log:\n%s", name, tail(b.logs))
		}
	})
	if name == "first" {
		if err := b.start(); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func (b *plBroker) start() error {
	srv, err := mqtt.New(mqtt.Options{DataDir: filepath.Dir(b.dataFile), SysInterval: -1,
		Logger: slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		return err
	}
	go func() { _ = srv.Serve(ln) }()
	b.srv, b.addr = srv, ln.Addr().String()
	return nil
}

// close closes the broker and returns what Close returned. After a power loss, the disk's writes
// and syncs, which wait since the loss, fail first, and the journal with them.
func (b *plBroker) close(t *testing.T) error {
	b.disk.Release()
	closed := make(chan error, 1)
	go func() { closed <- b.srv.Close() }()
	select {
	case err := <-closed:
		return err
	case <-time.After(plWait):
		t.Fatalf("the broker did not close in %v", plWait)
		return nil
	}
}

// plWorkload is the clients, whose state lives across both brokers as a real client's would.
type plWorkload struct {
	pubs []*plPublisher
	subs []*plSubscriber
}

func newPLWorkload() *plWorkload {
	return &plWorkload{
		pubs: []*plPublisher{newPLPublisher("p1", 5, 2), newPLPublisher("p2", 5, 2), newPLPublisher("p3", 4, 2), newPLPublisher("q1", 5, 1)},
		subs: []*plSubscriber{newPLSubscriber("s2", 5, 2, 4*plMessages), newPLSubscriber("s1", 4, 1, 4*plMessages)},
	}
}

// plConns are the connections of one broker life: subscribers first, then publishers.
type plConns struct {
	subs, pubs []*plConn
	fence      *plConn // life 2: publishes the fence once every publisher is done
	wg         sync.WaitGroup
	stopped    chan struct{} // closed by stop
}

// setUp connects every client for the first time and subscribes, before the power loss is armed:
// every session exists durably (CONNACK and SUBACK follow their commits).
func (w *plWorkload) setUp(addr string) (*plConns, error) {
	cs := &plConns{stopped: make(chan struct{})}
	for _, s := range w.subs {
		c, _, err := dialPL(addr, s.version, s.id)
		if err != nil {
			return cs, err
		}
		cs.subs = append(cs.subs, c)
		if err := c.send(rawpacket.Subscribe(1, "pl/#", s.qos)); err != nil {
			return cs, err
		}
		pk, err := c.next()
		if err != nil {
			return cs, err
		}
		if pk.FixedHeader.Type != packets.Suback || len(pk.ReasonCodes) != 1 || pk.ReasonCodes[0] != s.qos {
			return cs, fmt.Errorf("%s: SUBSCRIBE answered with %s", s.id, rawpacket.Describe(pk))
		}
	}
	for _, p := range w.pubs {
		c, _, err := dialPL(addr, p.version, p.id)
		if err != nil {
			return cs, err
		}
		cs.pubs = append(cs.pubs, c)
	}
	return cs, nil
}

// resume reconnects every client with Clean Start 0 to the second broker: each session must be
// there (Session Present 1 [MQTT-3.2.2-3]), its CONNACK having been committed before the loss.
func (w *plWorkload) resume(addr string) (*plConns, error) {
	cs := &plConns{stopped: make(chan struct{})}
	for _, s := range w.subs {
		c, present, err := dialPL(addr, s.version, s.id)
		if err == nil && !present {
			err = fmt.Errorf("%s: Session Present 0 after the power loss: its session was lost", s.id)
		}
		if err != nil {
			return cs, err
		}
		cs.subs = append(cs.subs, c)
	}
	for _, p := range w.pubs {
		c, present, err := dialPL(addr, p.version, p.id)
		if err == nil && !present {
			err = fmt.Errorf("%s: Session Present 0 after the power loss: its session was lost", p.id)
		}
		if err != nil {
			return cs, err
		}
		cs.pubs = append(cs.pubs, c)
	}
	fence, _, err := dialPL(addr, 5, plFence)
	if err != nil {
		return cs, err
	}
	cs.fence = fence
	return cs, nil
}

// start runs every client on its connection; done is closed when every publisher completed all
// its flows and every subscriber got every message (life 1) or the fence (life 2).
func (w *plWorkload) start(life int, cs *plConns) (done chan struct{}) {
	done = make(chan struct{})
	complete := make([]chan struct{}, len(w.subs))
	for i, s := range w.subs {
		complete[i] = make(chan struct{})
		cs.wg.Go(func() { s.run(cs.subs[i], life, complete[i]) })
	}
	var pubs sync.WaitGroup
	finished := make([]bool, len(w.pubs))
	for i, p := range w.pubs {
		pubs.Go(func() { finished[i] = p.run(cs.pubs[i], life) })
	}
	cs.wg.Go(func() {
		pubs.Wait() // they all return: done, or their connection closed by stop
		if slices.Contains(finished, false) {
			return
		}
		if life == 2 {
			fence := newPLPublisher(plFence, 5, 2)
			fence.n = 1
			if !fence.run(cs.fence, life) {
				return
			}
		}
		for _, ch := range complete {
			select {
			case <-ch:
			case <-cs.stopped:
				return
			}
		}
		close(done)
	})
	return done
}

// stop closes every connection abruptly and waits for the clients to return.
func (w *plWorkload) stop(cs *plConns) {
	for _, c := range slices.Concat(cs.subs, cs.pubs, []*plConn{cs.fence}) {
		if c != nil {
			c.close()
		}
	}
	close(cs.stopped)
	cs.wg.Wait()
}

func (w *plWorkload) ackedCount() int {
	n := 0
	for _, p := range w.pubs {
		n += len(p.acked)
	}
	return n
}

// check compares what the subscribers' applications got with what the publishers sent.
func (w *plWorkload) check(t *testing.T) {
	t.Helper()
	type message struct {
		p   *plPublisher
		num int
	}
	sent := map[string]message{}
	for _, p := range w.pubs {
		for _, e := range p.problems {
			t.Error(e)
		}
		for n := range p.n {
			sent[plKey(p.id, n)] = message{p, n}
		}
	}
	for _, s := range w.subs {
		for _, e := range s.problems {
			t.Error(e)
		}
		for key, copies := range s.copies {
			m, ok := sent[key]
			switch {
			case key == plFence:
			case !ok:
				t.Errorf("%s: got %q, which no publisher sent", s.id, key)
			case copies[0].topic != "pl/"+m.p.id:
				t.Errorf("%s: got %q on topic %q, sent on %q", s.id, key, copies[0].topic, "pl/"+m.p.id)
			}
		}
		for key, m := range sent {
			copies := s.copies[key]
			ack := "not acknowledged before the power loss"
			if m.p.acked[m.num] == 1 {
				ack = "acknowledged (PUBREC or PUBACK) before the power loss"
			}
			qos := min(m.p.qos, s.qos)
			switch {
			case len(copies) == 0:
				t.Errorf("%s: message %s, %s, was never delivered", s.id, key, ack)
			case slices.ContainsFunc(copies, func(c plCopy) bool { return c.qos != qos }):
				t.Errorf("%s: message %s, published at QoS %d, delivered at another QoS than %d: %v", s.id, key, m.p.qos, qos, copies)
			case qos == 2 && len(copies) > 1:
				t.Errorf("%s: message %s, %s, was delivered %d times at QoS 2: %v", s.id, key, ack, len(copies), copies)
			case qos == 1 && slices.ContainsFunc(copies[1:], func(c plCopy) bool { return !c.dup || c.id != copies[0].id }):
				// A QoS 1 delivery may be repeated, as a resend of the first one only: a copy
				// under another id or without DUP=1 was routed twice.
				t.Errorf("%s: message %s, %s, was delivered again at QoS 1, not as a resend (DUP=1, same id): %v", s.id, key, ack, copies)
			}
		}
	}
}

func plKey(pub string, n int) string { return fmt.Sprintf("%s/%d", pub, n) }

// plPublisher is a publisher's state, kept across connections. A QoS 1 one gives each message a
// dedup id (the 5.0 user property "dedup-id", mqtt.Options.DedupProperty), which makes its resends
// after the restart exactly-once too.
type plPublisher struct {
	id       string
	version  byte
	qos      byte
	n        int         // messages to send
	next     int         // messages sent at least once
	flight   []*plFlow   // in the order of their first PUBLISH
	lastID   uint16      // the last packet id taken
	acked    map[int]int // message -> the broker life whose PUBREC or PUBACK acknowledged it
	problems []string
}

// plFlow is one message in flight.
type plFlow struct {
	num    int
	id     uint16
	pubrec bool // PUBREC received: the broker owns the message; PUBREL sent
}

func newPLPublisher(id string, version, qos byte) *plPublisher {
	return &plPublisher{id: id, version: version, qos: qos, n: plMessages, acked: map[int]int{}}
}

func (p *plPublisher) publish(c *plConn, f *plFlow, dup bool) error {
	topic, payload := "pl/"+p.id, plKey(p.id, f.num)
	if p.id == plFence {
		topic, payload = "pl/"+plFence, plFence
	}
	pk := rawpacket.Publish(topic, p.qos, f.id, []byte(payload), dup)
	if p.qos == 1 {
		pk.Properties.User = []packets.UserProperty{{Key: "dedup-id", Val: payload}}
	}
	return c.send(pk)
}

// freeID is the next packet id after the last one taken that is not in flight.
func (p *plPublisher) freeID() uint16 {
	for {
		p.lastID = p.lastID%plIDs + 1
		if !slices.ContainsFunc(p.flight, func(f *plFlow) bool { return f.id == p.lastID }) {
			return p.lastID
		}
	}
}

// run resends what is in flight (on a resumed session), then sends its messages within the window
// and completes their flows. It returns true once every flow is complete, false when the
// connection ends first.
func (p *plPublisher) run(c *plConn, life int) bool {
	for _, f := range p.flight { // [MQTT-4.4.0-1]: in their original order, PUBLISH with DUP=1 [MQTT-3.3.1-1]
		var err error
		if f.pubrec {
			err = c.send(rawpacket.Ack(packets.Pubrel, f.id, 0))
		} else {
			err = p.publish(c, f, true)
		}
		if err != nil {
			return false
		}
	}
	for {
		for len(p.flight) < plWindow && p.next < p.n {
			f := &plFlow{num: p.next, id: p.freeID()}
			p.next++
			p.flight = append(p.flight, f)
			if p.publish(c, f, false) != nil {
				return false
			}
		}
		if p.next == p.n && len(p.flight) == 0 {
			return true
		}
		pk, err := c.next()
		if err != nil {
			return false
		}
		k := slices.IndexFunc(p.flight, func(f *plFlow) bool { return f.id == pk.PacketID })
		switch pk.FixedHeader.Type {
		case packets.Pubrec:
			if k < 0 {
				p.problems = append(p.problems, fmt.Sprintf("%s: PUBREC for id %d, not in flight", p.id, pk.PacketID))
				continue
			}
			f := p.flight[k]
			if pk.ReasonCode >= 0x80 {
				p.problems = append(p.problems, fmt.Sprintf("%s: message %d refused: PUBREC 0x%02X", p.id, f.num, pk.ReasonCode))
				p.flight = slices.Delete(p.flight, k, k+1)
				continue
			}
			if !f.pubrec {
				f.pubrec, p.acked[f.num] = true, life
			}
			if c.send(rawpacket.Ack(packets.Pubrel, f.id, 0)) != nil {
				return false
			}
		case packets.Puback:
			if k < 0 || p.qos != 1 {
				p.problems = append(p.problems, fmt.Sprintf("%s: PUBACK for id %d, which awaits no PUBACK", p.id, pk.PacketID))
				continue
			}
			if pk.ReasonCode >= 0x80 {
				p.problems = append(p.problems, fmt.Sprintf("%s: message %d refused: PUBACK 0x%02X", p.id, p.flight[k].num, pk.ReasonCode))
			} else {
				p.acked[p.flight[k].num] = life
			}
			p.flight = slices.Delete(p.flight, k, k+1)
		case packets.Pubcomp:
			// 0x92 (id not found) is normal here: the PUBREL's commit may have survived the
			// loss and its PUBCOMP not; a lost message shows as one never delivered.
			if k < 0 || !p.flight[k].pubrec {
				p.problems = append(p.problems, fmt.Sprintf("%s: PUBCOMP for id %d, which awaits no PUBCOMP", p.id, pk.PacketID))
				continue
			}
			p.flight = slices.Delete(p.flight, k, k+1)
		default:
			p.problems = append(p.problems, fmt.Sprintf("%s: unexpected %s", p.id, rawpacket.Describe(pk)))
		}
	}
}

// plSubscriber is a subscriber's state, kept across connections, and what its application got.
type plSubscriber struct {
	id       string
	version  byte
	qos      byte
	want     int                 // distinct messages the publishers send
	held     map[uint16]bool     // QoS 2 ids delivered and not released by PUBREL
	copies   map[string][]plCopy // what the application got, by payload
	problems []string
}

// plCopy is one copy delivered to the application.
type plCopy struct {
	life  int
	id    uint16
	qos   byte
	dup   bool
	topic string
}

func newPLSubscriber(id string, version, qos byte, want int) *plSubscriber {
	return &plSubscriber{id: id, version: version, qos: qos, want: want, held: map[uint16]bool{}, copies: map[string][]plCopy{}}
}

// run receives until the connection ends, closing complete once it has every message (life 1)
// or the fence (life 2).
func (s *plSubscriber) run(c *plConn, life int, complete chan struct{}) {
	completed := false
	for {
		pk, err := c.next()
		if err != nil {
			return
		}
		var ack packets.Packet
		switch pk.FixedHeader.Type {
		case packets.Publish:
			deliver := true
			switch pk.FixedHeader.Qos {
			case 2:
				// [MQTT-4.3.3-10] on the client's side: an id already delivered and not
				// released is a resend, answered and not delivered again.
				deliver = !s.held[pk.PacketID]
				s.held[pk.PacketID] = true
				ack = rawpacket.Ack(packets.Pubrec, pk.PacketID, 0)
			case 1:
				ack = rawpacket.Ack(packets.Puback, pk.PacketID, 0)
			}
			if deliver {
				key := string(pk.Payload)
				s.copies[key] = append(s.copies[key], plCopy{life: life, id: pk.PacketID, qos: pk.FixedHeader.Qos, dup: pk.FixedHeader.Dup, topic: pk.TopicName})
			}
		case packets.Pubrel:
			delete(s.held, pk.PacketID)
			ack = rawpacket.Ack(packets.Pubcomp, pk.PacketID, 0)
		default:
			s.problems = append(s.problems, fmt.Sprintf("%s: unexpected %s", s.id, rawpacket.Describe(pk)))
			continue
		}
		if ack.FixedHeader.Type != 0 && c.send(ack) != nil {
			return
		}
		if !completed && s.complete(life) {
			completed = true
			close(complete)
		}
	}
}

func (s *plSubscriber) complete(life int) bool {
	if life == 2 {
		return len(s.copies[plFence]) > 0
	}
	return len(s.copies) == s.want
}

// plConn is a raw MQTT connection: packets read by a goroutine, written by the client's.
type plConn struct {
	nc      net.Conn
	version byte
	in      chan packets.Packet // closed when reading ends
	done    chan struct{}
	once    sync.Once
	err     error // why reading ended; read after in is closed
}

// dialPL connects with Clean Start 0 (CleanSession 0) and, in 5.0, a Session Expiry Interval.
func dialPL(addr string, version byte, clientID string) (*plConn, bool, error) {
	nc, err := net.DialTimeout("tcp", addr, plWait)
	if err != nil {
		return nil, false, err
	}
	c := &plConn{nc: nc, version: version, in: make(chan packets.Packet, 64), done: make(chan struct{})}
	go c.read()
	if err := c.send(rawpacket.Connect(version, rawpacket.ConnectOptions{ClientID: clientID, SessionExpiry: plExpiry})); err != nil {
		c.close()
		return nil, false, err
	}
	pk, err := c.next()
	if err == nil && (pk.FixedHeader.Type != packets.Connack || pk.ReasonCode != 0) {
		err = fmt.Errorf("%s: CONNECT answered with %s", clientID, rawpacket.Describe(pk))
	}
	if err != nil {
		c.close()
		return nil, false, err
	}
	return c, pk.SessionPresent, nil
}

func (c *plConn) read() {
	defer close(c.in)
	br := bufio.NewReader(c.nc)
	for {
		pk, err := rawpacket.ReadFromServer(br, c.version, 0, nil)
		if err != nil {
			c.err = err
			return
		}
		select {
		case c.in <- pk:
		case <-c.done:
			return
		}
	}
}

// next is the next packet, or why there is none.
func (c *plConn) next() (packets.Packet, error) {
	select {
	case pk, ok := <-c.in:
		if !ok {
			if errors.Is(c.err, rawpacket.ErrMalformed) {
				return pk, c.err
			}
			return pk, fmt.Errorf("connection ended: %w", c.err)
		}
		return pk, nil
	case <-time.After(plWait):
		return packets.Packet{}, fmt.Errorf("nothing received in %v", plWait)
	}
}

func (c *plConn) send(pk packets.Packet) error {
	b, err := rawpacket.Encode(pk, c.version)
	if err != nil {
		return err
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(plWait))
	_, err = c.nc.Write(b)
	return err
}

func (c *plConn) close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.nc.Close()
	})
}

// tail is the end of a broker's log, shown when the test fails.
func tail(l *inflight.LogBuffer) string {
	s := l.String()
	if len(s) > 8000 {
		s = "...\n" + s[len(s)-8000:]
	}
	return s
}
