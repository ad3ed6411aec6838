package torture

import (
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

// subscribeID is the packet identifier of the subscriber's SUBSCRIBE.
const subscribeID = 1

// subscriber receives every message at QoS 2 on torture/#. With takeoverEvery > 0 its connection
// is replaced at that interval by a new one with the same client id: the broker must close the old
// one (5.0: DISCONNECT 0x8E) and resume the session on the new one.
type subscriber struct {
	env           *clientEnv
	takeoverEvery time.Duration
	receiveMax    int
	pubQoS        byte // the publishers' QoS: deliveries come at it
	rng           *rand.Rand
	group         *shareGroup // a member of the shared subscription group (shared.go); nil for a plain subscriber

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
	// A member's graceful leave (shared.go): UNSUBSCRIBE sent, UNSUBACK received, and rejoining
	// until the SUBACK of its return.
	leaving, unsubscribed, rejoining bool
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
	mt := s.memberTimers()
	defer mt.stop()
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
		case <-mt.leave:
			if cur != nil {
				s.startLeave(cur)
			}
		case <-mt.poll:
			if cur != nil && s.leaveReady() {
				if !s.finishLeave(ctx, cur, lost) {
					cur = nil
					return
				}
				cur = nil
			}
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
	if s.leaving { // the connection ended during a leave: come back now
		s.leaving = false
	}
	if !s.subscribed {
		filter := tortureFilter
		if s.group != nil {
			filter = tortureShareFilter
		}
		return c.Write(mqttclient.Subscribe(subscribeID, filter, 2))
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
			if qos != s.pubQoS {
				s.protocolError("QoS %d delivery %s: subscribed at QoS 2, published at QoS %d", qos, mqttclient.Describe(pk), s.pubQoS)
			}
			k, err := s.parse(pk)
			if err != nil {
				s.tally.addCorrupt()
			} else if s.tally.addQoS1(k, s.delivery(pk, gen)) {
				s.env.progress()
			}
			if qos == 1 {
				return []packets.Packet{mqttclient.Ack(packets.Puback, id, 0)}, nil
			}
			return nil, nil
		}
		if k, ok := s.awaiting[id]; ok {
			// A redelivery: PUBREC again, do not count it (the receiver's side of [MQTT-4.3.3-10]).
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
		s.handleMember(pk)
		s.readyOnce.Do(func() { close(s.ready) })
	case packets.Disconnect:
		if pk.ReasonCode == 0x8E && s.takingOver {
			s.res.TakenOverNoted++ // it may come before the new connection's CONNACK
		}
		return nil, fmt.Errorf("broker sent DISCONNECT 0x%02X", pk.ReasonCode)
	case packets.Pingresp:
	case packets.Unsuback:
		if s.group == nil {
			s.protocolError("unexpected %s", mqttclient.Describe(pk))
		}
		s.handleMember(pk)
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
	c.QoS1Redeliveries = r.QoS1Redeliveries
	c.ErrorSample = slices.Clone(c.ErrorSample)
	c.AwaitingPubrel = len(s.awaiting)
	return c
}
