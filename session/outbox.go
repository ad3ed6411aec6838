package session

import (
	"github.com/oncemq/oncemq/session/internal/failpoint"
)

// outgoing is a packet for one connection, to be sent once the batch that promises it is committed.
type outgoing struct {
	conn Conn
	pk   Outgoing
}

// outbox collects the packets a change under Broker.mu wants to send; flush runs in the journal
// callback. Sends to one connection keep their order. Most changes send one packet (a PUBREL, the
// PUBLISH of a 1:1 delivery): it is held in the outbox itself, so that a done callback that
// captures the outbox by value carries it without another allocation.
type outbox struct {
	first outgoing
	rest  []outgoing
	n     int
}

// add queues pk for c; a nil c (an offline session) gets nothing. Caller holds b.mu.
func (o *outbox) add(c Conn, pk Outgoing) {
	if c == nil {
		return
	}
	if o.n == 0 {
		o.first = outgoing{conn: c, pk: pk}
	} else {
		o.rest = append(o.rest, outgoing{conn: c, pk: pk})
	}
	o.n++
}

// addAll queues every packet of p after those of o.
func (o *outbox) addAll(p *outbox) {
	p.each(func(g *outgoing) { o.add(g.conn, g.pk) })
}

// last is the packet queued last; the outbox must not be empty.
func (o *outbox) last() *Outgoing {
	if o.n == 1 {
		return &o.first.pk
	}
	return &o.rest[len(o.rest)-1].pk
}

func (o *outbox) each(f func(*outgoing)) {
	if o.n == 0 {
		return
	}
	f(&o.first)
	for i := range o.rest {
		f(&o.rest[i])
	}
}

// flush sends every packet, in order. It runs after the commit that allows them, from the journal's
// done callback, without b.mu (or under b.mu when there was nothing to commit); a crash test's
// failpoint fires there (a build without the failpoint tag has none). A value receiver: a closure
// that calls it captures the outbox by value, in the closure itself.
func (o outbox) flush() {
	if o.n == 0 {
		return
	}
	send(&o.first)
	for i := range o.rest {
		send(&o.rest[i])
	}
}

func send(g *outgoing) {
	failpoint.BeforeSend(g.pk.Kind(), g.pk.QoS, g.pk.Code)
	g.conn.Send(g.pk)
}
