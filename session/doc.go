// Package session owns MQTT sessions: the registry by client id, takeover, expiry, subscriptions,
// the offline queue, the will, and routing a published message to every matching session.
//
// It is a layer of the broker engine, between package mqtt (connections, packets on the wire) and
// package inflight (packet-id tables and the durable journal). Its exported names are what package
// mqtt needs; it is not an embedding API: a program that embeds the broker uses package mqtt.
// docs/ARCHITECTURE.md describes the layers ("Durability rules", "Locking", "Goroutines").
//
// # Durability
//
// Every acknowledgement is sent only after what it promises is committed: the change is made in
// memory, its records go into one inflight.Batch, and the packets it allows (PUBREC, PUBACK,
// PUBCOMP, PUBREL, an outbound PUBLISH, SUBACK, CONNACK) are sent from the journal's done callback
// of that batch (outbox.go). A packet that promises nothing new, such as a second PUBREC for an id
// already awaiting PUBREL, still waits for the commits submitted before it, so that it cannot
// overtake the first answer's commit. durability_test.go has one test per rule.
//
// # Locking
//
// One mutex, Broker.mu, guards every session, the subscription index and the retained messages.
// A change to durable state is made in memory and its record submitted to the journal
// (Journal.Submit) before the lock is released. That is why there is one lock and not one per
// session: the journal's order must be the order in which the in-memory state changed, and a
// fan-out that touches many sessions must be committed as one batch, or a crash between two
// half-batches would lose or duplicate a message. Sections under the lock are short and do no I/O:
// packets are handed to a Conn, whose writer goroutine does the socket write.
//
// Lock order: Broker.mu, then the journal's own lock (Submit), then a Conn's (Send, Close). Every
// exported method of Broker takes Broker.mu itself; an unexported method that says "Caller holds
// b.mu" expects it held. Options.MayRead and Options.OnDrop are called with Broker.mu held and must
// not call back into the Broker.
//
// Acknowledgements are sent from the journal's done callbacks, on the journal's goroutine, without
// Broker.mu. Each callback captures the Conn that was current when the change was made; a Conn that
// has since been taken over or closed drops what it is given, and the new connection resends from
// the session state. Session timers (expiry, delayed will) run on their own goroutines and take
// Broker.mu.
//
// Routing lives here rather than in package mqtt for the same reason: it must run under the lock
// that guards the sessions it writes to.
package session
