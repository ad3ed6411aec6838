// Package session owns MQTT sessions: the registry by client id, takeover, expiry, subscriptions,
// the offline queue, the will, and routing a published message to every matching session.
//
// # Locking
//
// One mutex, Broker.mu, guards every session, the subscription index and the retained messages.
// A change to durable state is made in memory and its record submitted to the journal
// (inflight.Journal.Submit) before the lock is released. That is why there is one lock and not one
// per session: the journal's order must be the order in which the in-memory state changed, and a
// fan-out that touches many sessions must be committed as one batch, or a crash between two
// half-batches would lose or duplicate a message. Sections under the lock are short and do no I/O:
// packets are handed to a Conn, whose writer goroutine does the socket write.
//
// Acknowledgements are sent from the journal's done callbacks, after the commit (see package
// inflight). Each callback captures the Conn that was current when the change was made; a Conn that
// has since been taken over or closed drops what it is given, and the new connection resends from
// the session state.
//
// Routing lives here rather than in package mqtt for the same reason: it must run under the lock
// that guards the sessions it writes to.
package session
