package session

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/reason"
)

// recorder is one ordered log of what a test broker did: batches submitted, commits, and packets
// sent to every connection. A durability rule is a statement about this order.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf(format, args...))
}

// take returns the events so far and forgets them.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := r.events
	r.events = nil
	return ev
}

// fakeJournal is a Journal that commits only when the test says so (commit), so that a test can
// look at the broker between a submit and its commit. It numbers batches from 1 after every settle.
type fakeJournal struct {
	rec *recorder

	mu      sync.Mutex
	seq     uint64
	err     error // the journal has failed: every commit fails with it
	base    int   // batches submitted before the current step
	batches []*inflight.Batch
	pending []fakeSubmit
	bodies  map[uint64]*inflight.Message // every body a batch wrote, for LoadMessage
	loads   int                          // LoadMessage calls
}

type fakeSubmit struct {
	n     int // number of the batch in the current step
	batch *inflight.Batch
	done  func(error)
}

func (j *fakeJournal) Submit(b *inflight.Batch, done func(error)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if b == nil {
		b = &inflight.Batch{}
	}
	j.batches = append(j.batches, b)
	for _, m := range b.Written() {
		if j.bodies == nil {
			j.bodies = make(map[uint64]*inflight.Message)
		}
		j.bodies[m.Seq] = m
	}
	n := len(j.batches) - j.base
	j.pending = append(j.pending, fakeSubmit{n: n, batch: b, done: done})
	j.rec.add("submit #%d", n)
}

func (j *fakeJournal) NextSeq() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	return j.seq
}

// LoadMessage returns a body a batch wrote (deletes are not followed).
func (j *fakeJournal) LoadMessage(seq uint64) (*inflight.Message, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.loads++
	if m := j.bodies[seq]; m != nil {
		return m, nil
	}
	return nil, fmt.Errorf("message %d: %w", seq, inflight.ErrNoBody)
}

func (j *fakeJournal) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// fail makes the journal failed: Err reports err and every commit fails with it.
func (j *fakeJournal) fail(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.err = err
}

// commit commits every batch submitted so far, in submission order, and runs their done callbacks
// as the committer would: "commit #n" is logged before the callbacks of batch n run. Batches a
// callback submits wait for the next commit.
func (j *fakeJournal) commit() {
	j.mu.Lock()
	round := j.pending
	j.pending = nil
	err := j.err
	j.mu.Unlock()
	for _, s := range round {
		if err != nil {
			j.rec.add("fail #%d", s.n)
		} else {
			j.rec.add("commit #%d", s.n)
		}
		if s.done != nil {
			s.done(err)
		}
	}
}

// step starts a new step: batches are numbered from 1 again.
func (j *fakeJournal) step() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.base = len(j.batches)
}

// records lists the changes of every batch of the current step, each sorted: the order inside a
// batch is not a promise (fan-out visits sessions in map order), what it holds is.
func (j *fakeJournal) records() [][]string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out [][]string
	for _, b := range j.batches[j.base:] {
		lines := []string{}
		if b.Len() > 0 {
			lines = strings.Split(b.String(), "\n")
		}
		sort.Strings(lines)
		out = append(out, lines)
	}
	return out
}

// recConn is a Conn that logs what it is sent into the recorder, as "name <- PACKET ...".
type recConn struct {
	name string
	rec  *recorder
}

func (c *recConn) Send(o Outgoing) { c.rec.add("%s <- %s", c.name, describe(o.Packet())) }

func (c *recConn) Close(code reason.Code) { c.rec.add("%s closed: %s", c.name, code) }

func (c *recConn) Reserve(int) bool { return true }

// describe writes a packet the way the tests expect it.
func describe(pk packets.Packet) string {
	name := strings.ToUpper(packets.PacketNames[pk.FixedHeader.Type])
	switch pk.FixedHeader.Type {
	case packets.Publish:
		return fmt.Sprintf("PUBLISH id=%d qos=%d dup=%t retain=%t %s %s", pk.PacketID, pk.FixedHeader.Qos,
			pk.FixedHeader.Dup, pk.FixedHeader.Retain, pk.TopicName, pk.Payload)
	case packets.Puback, packets.Pubrec, packets.Pubrel, packets.Pubcomp:
		s := fmt.Sprintf("%s id=%d %s", name, pk.PacketID, reason.Code(pk.ReasonCode))
		for _, u := range pk.Properties.User {
			s += fmt.Sprintf(" %s=%s", u.Key, u.Val)
		}
		return s
	case packets.Suback, packets.Unsuback:
		return fmt.Sprintf("%s id=%d %v", name, pk.PacketID, pk.ReasonCodes)
	}
	return name
}

// harness is a Broker on a fakeJournal whose connections log into one recorder.
type harness struct {
	t   *testing.T
	rec *recorder
	j   *fakeJournal
	b   *Broker
}

func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	rec := &recorder{}
	j := &fakeJournal{rec: rec}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	b := New(j, nil, opts)
	t.Cleanup(b.Close)
	return &harness{t: t, rec: rec, j: j, b: b}
}

// settle commits everything submitted, forgets the log and starts a new step.
func (h *harness) settle() {
	h.j.commit()
	h.rec.take()
	h.j.step()
}

// connect connects a 5.0 client with Clean Start, commits, and returns its session and connection.
func (h *harness) connect(id string, expiry uint32, receiveMax uint16) (*Session, *recConn) {
	return h.connectAs(ConnectRequest{ClientID: id, ProtocolVersion: 5, CleanStart: true, ExpiryInterval: expiry,
		ReceiveMax: receiveMax})
}

func (h *harness) connectAs(req ConnectRequest) (*Session, *recConn) {
	h.t.Helper()
	c := &recConn{name: req.ClientID, rec: h.rec}
	var err error
	s := h.b.Connect(req, c, func(_ bool, e error) { err = e })
	h.settle()
	if err != nil {
		h.t.Fatalf("connect %s: %v", req.ClientID, err)
	}
	return s, c
}

// subscribe subscribes s to filter at qos (5.0 options otherwise zero) and commits.
func (h *harness) subscribe(s *Session, c Conn, filter string, qos byte) {
	h.t.Helper()
	h.b.Subscribe(s, c, 1, []SubscriptionRequest{{Filter: filter, QoS: qos}})
	h.settle()
}

// publish hands the broker a PUBLISH from s's client; it does not commit.
func (h *harness) publish(s *Session, c Conn, topic, payload string, qos byte, id uint16) {
	h.t.Helper()
	m := &inflight.Message{Topic: topic, Payload: []byte(payload), QoS: qos}
	if err := h.b.Publish(s, c, m, id, 100); err != nil {
		h.t.Fatalf("publish: %v", err)
	}
}

// publishDedup hands the broker a PUBLISH from s's client with the user property dedup-id=dedupID;
// it does not commit.
func (h *harness) publishDedup(s *Session, c Conn, topic, payload string, qos byte, id uint16, dedupID string) {
	h.t.Helper()
	m := &inflight.Message{Topic: topic, Payload: []byte(payload), QoS: qos,
		Properties: packets.Properties{User: []packets.UserProperty{{Key: "dedup-id", Val: dedupID}}}}
	if err := h.b.Publish(s, c, m, id, 100); err != nil {
		h.t.Fatalf("publish: %v", err)
	}
}

// publishLocal publishes as the embedding program; done is logged as "local <- done: ERR".
func (h *harness) publishLocal(topic, payload string, qos byte, retain bool) {
	m := &inflight.Message{Topic: topic, Payload: []byte(payload), QoS: qos, Retain: retain}
	h.b.PublishLocal(m, func(err error) { h.rec.add("local <- done: %v", err) })
}

// expectEvents checks the events logged since the last take.
func (h *harness) expectEvents(what string, want ...string) {
	h.t.Helper()
	got := h.rec.take()
	if !slices.Equal(got, want) {
		h.t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// commitExpect commits what is pending, checks every event since the last check (the submits
// included), and starts a new step.
func (h *harness) commitExpect(what string, want ...string) {
	h.t.Helper()
	h.j.commit()
	h.expectEvents(what, want...)
	h.j.step()
}
