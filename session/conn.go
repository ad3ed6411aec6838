package session

import (
	"github.com/oncemq/oncemq/session/reason"
)

// Conn is the session layer's view of a network connection. Package mqtt implements it.
type Conn interface {
	// Send queues a packet for the connection's writer and returns at once. It is called with
	// Broker.mu held and from journal callbacks, so it must never block. A closed Conn drops it.
	Send(pk Outgoing)
	// Close closes the connection; for 5.0 a code of 0x80 or more is sent as DISCONNECT first. It
	// must not block and must not call back into the Broker synchronously.
	Close(code reason.Code)
	// Reserve claims n bytes of the connection's write queue for a QoS 1 or 2 PUBLISH that will be
	// sent (see PublishCost), and reports false when the queue is at its limit: the message then
	// stays in the session's queue, and the connection calls Broker.Drained once its queue has
	// room again. It is called with Broker.mu held and must never block.
	Reserve(n int) bool
}
