package torture

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/cmd/oncemq/internal/mqttclient"
)

// The torture's clients keep their MQTT session state in the torture process, which never dies, so
// that it survives every connection: this is what an exactly-once client must do [MQTT-4.1.0-1].
// They speak MQTT 5.0 with Clean Start 0 and a Session Expiry Interval on every reconnect, expect
// Session Present 1, and resend what is unacknowledged with the same packet identifiers
// [MQTT-4.4.0-1].

const (
	tortureSessionExpiry = 3600 // seconds: longer than any run
	tortureTopicPrefix   = "torture/p"
	tortureFilter        = "torture/#"
	tortureConnectWait   = 10 * time.Second // from CONNECT to CONNACK
	tortureDialWait      = 2 * time.Second
	backoffMin           = 20 * time.Millisecond
	backoffMax           = 500 * time.Millisecond
	maxErrorSamples      = 10
)

// backoff spaces reconnection attempts: 20ms doubling to 500ms, with jitter.
type backoff struct {
	d   time.Duration
	rng *rand.Rand
}

// wait sleeps for the next delay; false if ctx ended first.
func (b *backoff) wait(ctx context.Context) bool {
	b.d = min(max(2*b.d, backoffMin), backoffMax)
	d := b.d/2 + time.Duration(b.rng.Int64N(int64(b.d/2)+1))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (b *backoff) reset() { b.d = 0 }

// dialConnect opens a connection and sends CONNECT; it returns the CONNACK.
func dialConnect(ctx context.Context, addr string, o mqttclient.ConnectOptions) (*mqttclient.Conn, packets.Packet, error) {
	c, err := mqttclient.Dial(ctx, addr, tortureDialWait)
	if err != nil {
		return nil, packets.Packet{}, err
	}
	ack, err := c.Connect(o, tortureConnectWait)
	if err != nil {
		c.Close()
		return nil, ack, err
	}
	return c, ack, nil
}

// readResult is one packet read by a connection's reader goroutine, or the error that ended it.
type readResult struct {
	pk  packets.Packet
	err error
}

// clientEnv is what the clients need from the torture run.
type clientEnv struct {
	addr     string
	start    time.Time
	progress func()     // one more message acknowledged to a publisher or counted by a subscriber
	run      func() int // the broker's current run number
}

// ---- publisher ----

// outMsg is a QoS 2 PUBLISH the publisher sent and whose flow is not complete.
type outMsg struct {
	id       uint16
	seq      int
	released bool   // PUBREC received, PUBREL sent: awaiting PUBCOMP
	order    uint64 // when sent (PUBLISH) or released (PUBREL): the resend order
}

// publisher sends messages 0..n-1 at QoS 2 on its own topic, at most window in flight.
type publisher struct {
	env         *clientEnv
	index       int
	topic       string
	n           int
	window      int
	payloadSize int
	rng         *rand.Rand

	// Session state, owned by run's goroutine; it outlives connections.
	established bool // a CONNACK was received: the broker has a session
	next        int  // next sequence number to publish
	inflight    map[uint16]*outMsg
	lastID      uint16
	order       uint64
	refused     map[msgKey]byte
	acked       []bool // [seq]: a successful PUBREC was received

	res PublisherResult // read once run has returned
}

func newPublisher(env *clientEnv, index, n, window, payloadSize int, seed uint64) *publisher {
	return &publisher{
		env:         env,
		index:       index,
		topic:       tortureTopicPrefix + strconv.Itoa(index),
		n:           n,
		window:      window,
		payloadSize: payloadSize,
		rng:         rand.New(rand.NewPCG(seed, uint64(index)+1)),
		inflight:    make(map[uint16]*outMsg),
		refused:     make(map[msgKey]byte),
		acked:       make([]bool, n),
		res: PublisherResult{
			Name:     fmt.Sprintf("pub%d", index+1),
			ClientID: fmt.Sprintf("torture-pub-%d", index+1),
			Messages: n,
		},
	}
}

// run publishes every message and returns once each is complete (PUBCOMP or a refusal), or when
// ctx ends.
func (p *publisher) run(ctx context.Context) {
	bo := backoff{rng: p.rng}
	for ctx.Err() == nil {
		c, ack, err := dialConnect(ctx, p.env.addr, mqttclient.ConnectOptions{
			ClientID:      p.res.ClientID,
			CleanStart:    !p.established,
			SessionExpiry: tortureSessionExpiry,
		})
		if err != nil {
			if !bo.wait(ctx) {
				return
			}
			continue
		}
		bo.reset()
		p.res.Connections++
		if p.established && !ack.SessionPresent {
			p.res.SessionsLost++
			p.protocolError("CONNACK with Session Present 0 on connection %d: the broker lost the session", p.res.Connections)
		}
		p.established = true
		limit := p.window
		if rm := int(ack.Properties.ReceiveMaximum); rm > 0 {
			limit = min(limit, rm) // the broker's Receive Maximum [MQTT-3.3.4-7]
		}
		err = p.serve(ctx, c, limit)
		c.Close()
		if err == nil {
			return
		}
	}
}

func (p *publisher) done() bool { return p.next == p.n && len(p.inflight) == 0 }

// serve runs one connection: resend, then publish within the window.
func (p *publisher) serve(ctx context.Context, c *mqttclient.Conn, limit int) error {
	in := make(chan readResult, 256)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			pk, err := c.Read()
			select {
			case in <- readResult{pk, err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()

	out := p.resend()
	for {
		for len(p.inflight) < limit && p.next < p.n {
			out = append(out, p.publishNew())
		}
		if p.done() {
			out = append(out, mqttclient.Disconnect(0))
			_ = c.Write(out...)
			return nil
		}
		if len(out) > 0 {
			if err := c.Write(out...); err != nil {
				return err
			}
			out = out[:0]
		}
		var r readResult
		select {
		case r = <-in:
		case <-ctx.Done():
			return ctx.Err()
		}
		for {
			if r.err != nil {
				return r.err
			}
			replies, err := p.handle(r.pk)
			if err != nil {
				return err
			}
			out = append(out, replies...)
			select {
			case r = <-in:
				continue
			default:
			}
			break
		}
	}
}

// resend is what a resumed session sends first: every PUBLISH awaiting PUBREC again with DUP=1 and
// its id, every PUBREL awaiting PUBCOMP again, in their original order [MQTT-4.4.0-1].
func (p *publisher) resend() []packets.Packet {
	msgs := make([]*outMsg, 0, len(p.inflight))
	for _, m := range p.inflight {
		msgs = append(msgs, m)
	}
	slices.SortFunc(msgs, func(a, b *outMsg) int { return cmp.Compare(a.order, b.order) })
	var out []packets.Packet
	for _, m := range msgs {
		if m.released {
			p.res.ResentPubrel++
			out = append(out, mqttclient.Ack(packets.Pubrel, m.id, 0))
		} else {
			p.res.ResentPublish++
			out = append(out, mqttclient.Publish(p.topic, 2, m.id, encodePayload(p.index, m.seq, p.payloadSize), true))
		}
	}
	return out
}

// publishNew takes the next sequence number and a free packet identifier.
func (p *publisher) publishNew() packets.Packet {
	id := p.lastID
	for {
		id++
		if id == 0 {
			id = 1
		}
		if p.inflight[id] == nil {
			break
		}
	}
	p.lastID = id
	p.order++
	m := &outMsg{id: id, seq: p.next, order: p.order}
	p.inflight[id] = m
	p.next++
	return mqttclient.Publish(p.topic, 2, id, encodePayload(p.index, m.seq, p.payloadSize), false)
}

// handle applies one packet from the broker to the session state and returns the replies. An error
// ends the connection.
func (p *publisher) handle(pk packets.Packet) ([]packets.Packet, error) {
	id := pk.PacketID
	switch pk.FixedHeader.Type {
	case packets.Pubrec:
		m := p.inflight[id]
		switch {
		case m == nil:
			p.protocolError("PUBREC for id %d, which is not in flight", id)
		case pk.ReasonCode >= 0x80:
			// Refused: the flow ends here and the message is not the broker's [MQTT-4.3.3-9].
			k := msgKey{p.index, m.seq}
			p.refused[k] = pk.ReasonCode
			p.res.Refused++
			if len(p.res.RefusedSample) < maxErrorSamples {
				p.res.RefusedSample = append(p.res.RefusedSample, fmt.Sprintf("%v: PUBREC 0x%02X", k, pk.ReasonCode))
			}
			delete(p.inflight, id)
		case m.released:
			return []packets.Packet{mqttclient.Ack(packets.Pubrel, id, 0)}, nil
		default:
			m.released = true
			p.acked[m.seq] = true
			p.order++
			m.order = p.order
			p.env.progress()
			return []packets.Packet{mqttclient.Ack(packets.Pubrel, id, 0)}, nil
		}
	case packets.Pubcomp:
		m := p.inflight[id]
		switch {
		case m == nil:
			p.protocolError("PUBCOMP for id %d, which is not in flight", id)
		case !m.released:
			p.protocolError("PUBCOMP for id %d (p%d#%d) before its PUBREC", id, p.index, m.seq)
		default:
			delete(p.inflight, id)
			p.res.Completed++
		}
	case packets.Disconnect:
		return nil, fmt.Errorf("broker sent DISCONNECT 0x%02X", pk.ReasonCode)
	case packets.Pingresp:
	default:
		p.protocolError("unexpected %s", mqttclient.Describe(pk))
	}
	return nil, nil
}

func (p *publisher) protocolError(format string, args ...any) {
	p.res.ProtocolErrors++
	if len(p.res.ErrorSample) < maxErrorSamples {
		p.res.ErrorSample = append(p.res.ErrorSample, fmt.Sprintf(format, args...))
	}
}

// ---- subscriber ----

// subscribeID is the packet identifier of the subscriber's SUBSCRIBE.
const subscribeID = 1

// subscriber receives every message at QoS 2 on torture/#. With takeoverEvery > 0 its connection
// is replaced at that interval by a new one with the same client id: the broker must close the old
// one (5.0: DISCONNECT 0x8E) and resume the session on the new one.
type subscriber struct {
	env           *clientEnv
	takeoverEvery time.Duration
	receiveMax    int
	rng           *rand.Rand

	ready     chan struct{} // closed at the first SUBACK granting QoS 2
	readyOnce sync.Once

	mu          sync.Mutex // guards the following
	gen         int        // number of the current connection; packets of older ones are ignored
	established bool       // a CONNACK was received: the broker has a session
	subscribed  bool
	takingOver  bool // a takeover's CONNECT is on its way
	fatal       error
	awaiting    map[uint16]msgKey // ids received, PUBREC sent, PUBREL not yet received
	tally       *tally
	lastPublish time.Time
	res         SubscriberResult
}

func newSubscriber(env *clientEnv, name, clientID string, takeoverEvery time.Duration, receiveMax, pubs, perPub int, seed uint64, index int) *subscriber {
	return &subscriber{
		env:           env,
		takeoverEvery: takeoverEvery,
		receiveMax:    receiveMax,
		rng:           rand.New(rand.NewPCG(seed, 1000+uint64(index))),
		ready:         make(chan struct{}),
		awaiting:      make(map[uint16]msgKey),
		tally:         newTally(pubs, perPub),
		res:           SubscriberResult{Name: name, ClientID: clientID, Takeover: takeoverEvery > 0},
	}
}

// run keeps the subscriber connected until ctx ends.
func (s *subscriber) run(ctx context.Context) {
	bo := backoff{rng: s.rng}
	var tick <-chan time.Time
	if s.takeoverEvery > 0 {
		tk := time.NewTicker(s.takeoverEvery)
		defer tk.Stop()
		tick = tk.C
	}
	var (
		cur     *mqttclient.Conn
		lost    chan error
		replace bool
	)
	defer func() {
		if cur != nil {
			cur.Close()
		}
	}()
	for {
		if cur == nil || replace {
			s.setTakingOver(replace)
			replace = false
			c, ack, err := dialConnect(ctx, s.env.addr, mqttclient.ConnectOptions{
				ClientID:       s.res.ClientID,
				CleanStart:     !s.established, // written by this goroutine only
				SessionExpiry:  tortureSessionExpiry,
				ReceiveMaximum: uint16(s.receiveMax),
			})
			switch {
			case err == nil:
				bo.reset()
				lost = make(chan error, 1)
				if err := s.attach(c, ack, cur); err != nil {
					c.Close()
					lost <- err
				} else {
					go s.read(c, s.currentGen(), lost)
				}
				cur = c
			case ctx.Err() != nil:
				return
			case cur == nil:
				if !bo.wait(ctx) {
					return
				}
				continue
			}
			// A takeover that could not connect keeps the current connection.
		}
		select {
		case <-lost:
			cur = nil
		case <-tick:
			replace = s.isSubscribed()
		case <-ctx.Done():
			return
		}
	}
}

// setTakingOver tells the reader that a new connection is being made while the current one is up:
// the broker will end the current one with DISCONNECT 0x8E.
func (s *subscriber) setTakingOver(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.takingOver = on
}

func (s *subscriber) currentGen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

func (s *subscriber) isSubscribed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.subscribed
}

// attach makes c, whose CONNACK is ack, the subscriber's connection. old, if not nil, is the
// connection it takes over: from now on its packets are ignored; the broker closes it.
func (s *subscriber) attach(c *mqttclient.Conn, ack packets.Packet, old *mqttclient.Conn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	s.takingOver = false
	s.res.Connections++
	if old != nil {
		s.res.Takeovers++
		_ = old.SetReadDeadline(time.Now().Add(5 * time.Second)) // read its DISCONNECT, then give up
	}
	if s.established && !ack.SessionPresent {
		s.res.SessionsLost++
		s.protocolError("CONNACK with Session Present 0 on connection %d: the broker lost the session", s.gen)
		// The client must discard its session state [MQTT-3.2.2-4] and subscribe again.
		clear(s.awaiting)
		s.subscribed = false
	}
	s.established = true
	if !s.subscribed {
		return c.Write(mqttclient.Subscribe(subscribeID, tortureFilter, 2))
	}
	return nil
}

// read reads connection number gen until it ends. Packets that arrive after a newer connection
// took over are not processed: the new connection resends what the old one left unfinished.
func (s *subscriber) read(c *mqttclient.Conn, gen int, lost chan<- error) {
	defer c.Close()
	var out []packets.Packet
	for {
		pk, err := c.Read()
		if err != nil {
			lost <- err
			return
		}
		s.mu.Lock()
		if s.gen != gen {
			if pk.FixedHeader.Type == packets.Disconnect && pk.ReasonCode == 0x8E {
				s.res.TakenOverNoted++
			}
			s.mu.Unlock()
			out = out[:0]
			continue
		}
		replies, err := s.handle(pk, gen)
		s.mu.Unlock()
		out = append(out, replies...)
		if err == nil && len(out) > 0 && c.Buffered() == 0 {
			err = c.Write(out...)
			out = out[:0]
		}
		if err != nil {
			lost <- err
			return
		}
	}
}

// handle applies one packet of the current connection to the session state and returns the
// replies. Caller holds s.mu.
func (s *subscriber) handle(pk packets.Packet, gen int) ([]packets.Packet, error) {
	id := pk.PacketID
	switch pk.FixedHeader.Type {
	case packets.Publish:
		s.lastPublish = time.Now()
		if qos := pk.FixedHeader.Qos; qos != 2 {
			s.protocolError("QoS %d delivery %s: subscribed at QoS 2", qos, mqttclient.Describe(pk))
			k, err := s.parse(pk)
			if err != nil {
				s.tally.addCorrupt()
			} else if s.tally.add(k, s.delivery(pk, gen)) {
				s.env.progress()
			}
			if qos == 1 {
				return []packets.Packet{mqttclient.Ack(packets.Puback, id, 0)}, nil
			}
			return nil, nil
		}
		if k, ok := s.awaiting[id]; ok {
			// A redelivery: PUBREC again, do not count it [MQTT-4.3.3-10 for the receiver's side].
			s.res.Redeliveries++
			if got, err := s.parse(pk); err != nil || got != k {
				s.protocolError("id %d redelivered with another message (%v, %v) while %v awaits PUBREL", id, got, err, k)
			} else if !pk.FixedHeader.Dup {
				s.protocolError("%v redelivered with id %d without DUP=1 [MQTT-3.3.1-1]", k, id)
			}
			return []packets.Packet{mqttclient.Ack(packets.Pubrec, id, 0)}, nil
		}
		k, err := s.parse(pk)
		if err != nil {
			s.tally.addCorrupt()
			if len(s.res.ErrorSample) < maxErrorSamples {
				s.res.ErrorSample = append(s.res.ErrorSample, fmt.Sprintf("corrupt delivery %s: %v", mqttclient.Describe(pk), err))
			}
			k = msgKey{-1, -1}
		} else if s.tally.add(k, s.delivery(pk, gen)) {
			s.env.progress()
		}
		if len(s.awaiting) >= s.receiveMax {
			s.protocolError("%v delivered with %d QoS 2 deliveries unacknowledged: Receive Maximum is %d [MQTT-3.3.4-9]",
				k, len(s.awaiting), s.receiveMax)
		}
		s.awaiting[id] = k
		return []packets.Packet{mqttclient.Ack(packets.Pubrec, id, 0)}, nil
	case packets.Pubrel:
		if _, ok := s.awaiting[id]; ok {
			delete(s.awaiting, id)
			return []packets.Packet{mqttclient.Ack(packets.Pubcomp, id, 0)}, nil
		}
		// Normal after a reconnect: the PUBCOMP we sent was lost with the connection.
		return []packets.Packet{mqttclient.Ack(packets.Pubcomp, id, 0x92)}, nil
	case packets.Suback:
		if id != subscribeID {
			s.protocolError("unexpected %s", mqttclient.Describe(pk))
			return nil, nil
		}
		if len(pk.ReasonCodes) != 1 || pk.ReasonCodes[0] != 2 {
			s.fatal = fmt.Errorf("%s: SUBSCRIBE %s at QoS 2 answered with %s", s.res.Name, tortureFilter, mqttclient.Describe(pk))
			return nil, s.fatal
		}
		s.subscribed = true
		s.readyOnce.Do(func() { close(s.ready) })
	case packets.Disconnect:
		if pk.ReasonCode == 0x8E && s.takingOver {
			s.res.TakenOverNoted++ // it may come before the new connection's CONNACK
		}
		return nil, fmt.Errorf("broker sent DISCONNECT 0x%02X", pk.ReasonCode)
	case packets.Pingresp:
	default:
		s.protocolError("unexpected %s", mqttclient.Describe(pk))
	}
	return nil, nil
}

// parse checks that a delivery is a message of this run, on its publisher's topic.
func (s *subscriber) parse(pk packets.Packet) (msgKey, error) {
	pub, seq, err := decodePayload(pk.Payload)
	if err != nil {
		return msgKey{}, err
	}
	k := msgKey{pub, seq}
	if want := tortureTopicPrefix + strconv.Itoa(pub); pk.TopicName != want {
		return k, fmt.Errorf("%v arrived on topic %q, published on %q", k, pk.TopicName, want)
	}
	if pub >= s.tally.pubs || seq >= s.tally.perPub {
		return k, fmt.Errorf("%v is not a message of this run", k)
	}
	return k, nil
}

func (s *subscriber) delivery(pk packets.Packet, gen int) delivery {
	return delivery{id: pk.PacketID, dup: pk.FixedHeader.Dup, conn: gen, run: s.env.run(), at: time.Since(s.env.start)}
}

// protocolError records a broker behaviour an exactly-once client cannot accept. Caller holds s.mu.
func (s *subscriber) protocolError(format string, args ...any) {
	s.res.ProtocolErrors++
	if len(s.res.ErrorSample) < maxErrorSamples {
		s.res.ErrorSample = append(s.res.ErrorSample, fmt.Sprintf(format, args...))
	}
}

// subscriberState is a snapshot for the drain.
type subscriberState struct {
	missing     int
	awaiting    int
	connections int
	lastPublish time.Time
	fatal       error
}

func (s *subscriber) state(exp *expectation) subscriberState {
	s.mu.Lock()
	defer s.mu.Unlock()
	missing, _ := s.tally.missing(exp, 0)
	return subscriberState{missing: missing, awaiting: len(s.awaiting), connections: s.res.Connections,
		lastPublish: s.lastPublish, fatal: s.fatal}
}

// result is the subscriber's report line.
func (s *subscriber) result(exp *expectation) SubscriberResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.tally.result(exp)
	c := s.res
	c.Expected, c.Delivered, c.Distinct, c.Lost, c.Duplicated = r.Expected, r.Delivered, r.Distinct, r.Lost, r.Duplicated
	c.Unexpected, c.Corrupt, c.LostSample, c.DupSample = r.Unexpected, r.Corrupt, r.LostSample, r.DupSample
	c.ErrorSample = slices.Clone(c.ErrorSample)
	c.AwaitingPubrel = len(s.awaiting)
	return c
}
