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
// callback. Sends to one connection keep their order.
type outbox []outgoing

// add queues pk for c; a nil c (an offline session) gets nothing. Caller holds b.mu.
func (o *outbox) add(c Conn, pk Outgoing) {
	if c != nil {
		*o = append(*o, outgoing{conn: c, pk: pk})
	}
}

// flush sends every packet, in order. It runs after the commit that allows them, from the journal's
// done callback, without b.mu (or under b.mu when there was nothing to commit); a crash test's
// failpoint fires there (a build without the failpoint tag has none).
func (o outbox) flush() {
	for i := range o {
		pk := &o[i].pk
		failpoint.BeforeSend(pk.Kind(), pk.QoS, pk.Code)
		o[i].conn.Send(*pk)
	}
}
