package torture

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/cmd/oncemq/internal/mqttclient"
)

// outMsg is a QoS 1 or 2 PUBLISH the publisher sent and whose flow is not complete.
type outMsg struct {
	id       uint16
	seq      int
	released bool   // PUBREC received, PUBREL sent: awaiting PUBCOMP
	order    uint64 // when sent (PUBLISH) or released (PUBREL): the resend order
}

// publisher sends messages 0..n-1 at QoS 2 (or 1) on its own topic, at most window in flight. Every
// PUBLISH carries its dedup id, the user property dedup-id, the same in every copy.
type publisher struct {
	qos     byte // 1 or 2
	amnesia bool // the session state is lost with every connection (see Config.PublisherAmnesia)

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
	forgotten   []int  // with amnesia: messages not complete when the state was lost, to send anew

	res PublisherResult // read once run has returned
}

func newPublisher(env *clientEnv, index, n, window, payloadSize int, seed uint64) *publisher {
	return &publisher{
		env:         env,
		qos:         2,
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
			CleanStart:    !p.established || p.amnesia,
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
		if p.established && !ack.SessionPresent && !p.amnesia {
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
		if p.amnesia {
			p.forget()
		}
	}
}

func (p *publisher) done() bool {
	return p.next == p.n && len(p.inflight) == 0 && len(p.forgotten) == 0
}

// forget loses the session state, as a device that reboots does: the packet ids in flight are
// gone, and every message not complete is to be sent again as a new PUBLISH.
func (p *publisher) forget() {
	for _, m := range p.inflight {
		p.forgotten = append(p.forgotten, m.seq)
	}
	slices.Sort(p.forgotten)
	clear(p.inflight)
}

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
// its id, every PUBREL awaiting PUBCOMP again, in their original order [MQTT-4.4.0-1]. After an
// amnesia there is no such state: the messages not complete go out as new PUBLISHes, new packet
// ids, DUP=0, the same dedup ids.
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
			out = append(out, p.packet(m, true))
		}
	}
	for _, seq := range p.forgotten {
		p.res.ResentPublish++
		out = append(out, p.publishSeq(seq))
	}
	p.forgotten = nil
	return out
}

// publishNew takes the next sequence number and a free packet identifier.
func (p *publisher) publishNew() packets.Packet {
	p.next++
	return p.publishSeq(p.next - 1)
}

// publishSeq sends message seq under a free packet identifier.
func (p *publisher) publishSeq(seq int) packets.Packet {
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
	m := &outMsg{id: id, seq: seq, order: p.order}
	p.inflight[id] = m
	return p.packet(m, false)
}

// packet is the PUBLISH of m, with its dedup id.
func (p *publisher) packet(m *outMsg, dup bool) packets.Packet {
	pk := mqttclient.Publish(p.topic, p.qos, m.id, encodePayload(p.index, m.seq, p.payloadSize), dup)
	pk.Properties.User = []packets.UserProperty{{Key: dedupProperty, Val: fmt.Sprintf("p%d-%d", p.index, m.seq)}}
	return pk
}

// dedupProperty is the broker's default --dedup-property.
const dedupProperty = "dedup-id"

// handle applies one packet from the broker to the session state and returns the replies. An error
// ends the connection.
func (p *publisher) handle(pk packets.Packet) ([]packets.Packet, error) {
	id := pk.PacketID
	switch pk.FixedHeader.Type {
	case packets.Puback:
		p.handlePuback(pk)
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

// handlePuback completes a QoS 1 flow: the message is the broker's (below 0x80) or refused.
func (p *publisher) handlePuback(pk packets.Packet) {
	m := p.inflight[pk.PacketID]
	switch {
	case m == nil || p.qos != 1:
		p.protocolError("PUBACK for id %d, which is not a QoS 1 PUBLISH in flight", pk.PacketID)
	case pk.ReasonCode >= 0x80:
		k := msgKey{p.index, m.seq}
		p.refused[k] = pk.ReasonCode
		p.res.Refused++
		if len(p.res.RefusedSample) < maxErrorSamples {
			p.res.RefusedSample = append(p.res.RefusedSample, fmt.Sprintf("%v: PUBACK 0x%02X", k, pk.ReasonCode))
		}
		delete(p.inflight, pk.PacketID)
	default:
		p.acked[m.seq] = true
		p.env.progress()
		delete(p.inflight, pk.PacketID)
		p.res.Completed++
	}
}

func (p *publisher) protocolError(format string, args ...any) {
	p.res.ProtocolErrors++
	if len(p.res.ErrorSample) < maxErrorSamples {
		p.res.ErrorSample = append(p.res.ErrorSample, fmt.Sprintf(format, args...))
	}
}
