// Package inflight keeps the state that exactly-once delivery depends on: per-session packet
// identifier tables for both directions, the outbound id allocator, and the durable journal that
// makes them survive a crash.
//
// It is the broker engine's lowest layer, used by package session and knowing nothing of
// connections or packets on the wire; it is not an embedding API. A program that embeds the broker
// uses package mqtt. docs/ARCHITECTURE.md describes the layers: "Durability rules" for what each
// acknowledgement waits for, "On-disk format" for the file, "Goroutines" for the committer.
//
// # What is durable, and when
//
// The in-memory tables are the working copy. Every change to durable state is described as a Batch
// and handed to the Journal with Submit. One committer goroutine appends every batch that is waiting
// to the log as one record, syncs once (group commit), and then calls each batch's done callback in
// submission order; checkpoints apply the log to the bbolt file later (wal.go). A caller sends the acknowledgement that a batch promises (PUBREC,
// PUBACK, PUBREL, CONNACK, an outbound PUBLISH) from that callback, so that:
//
//   - PUBREC for a new QoS 2 PUBLISH is sent only after the inbound id and the fan-out are committed;
//   - PUBCOMP is sent only after the inbound id is removed;
//   - an outbound PUBLISH is sent only after its id and message are recorded;
//   - PUBREL is sent only after the outbound id is recorded as "PUBREL sent".
//
// Submit keeps order: batches are applied in the order they were submitted, and callers submit while
// still holding the lock under which they changed the in-memory state, so the journal's order is the
// in-memory order. A batch is atomic: all of it is committed or none.
//
// # Goroutines and locks
//
// One committer goroutine, started by Open and waited for by Close, owns the log and runs the done
// callbacks; a callback must not block, and must not call Close. Checkpoints write bbolt from a
// goroutine of their own.
// Journal.mu guards only the queue of submitted batches: Submit takes it briefly and never waits on
// the disk, so callers may hold their own locks (the session layer's Broker.mu) around it. The
// tables (Inbound, Outbound) and Message reference counts are not locked here: the session layer
// guards them with its own lock.
//
// With Options.NoSync the commit is written to the OS page cache but not synced: every promise holds
// against a crash of the process, none against a power loss.
//
// # Failure
//
// If a commit fails, every batch in it gets the error, none is acknowledged, and the journal is
// failed: every later Submit gets ErrFailed (wrapping the first error) without touching the file.
// The broker then refuses new QoS 1 and 2 work, and Options.OnFail is told. The error also wraps
// the kind of failure: ErrDiskFull (no room to write: closing the journal and opening the file
// again once there is space recovers the last committed state) or ErrIO (an I/O error, a failed
// sync, anything else: the file cannot be trusted until the process restarts). failure.go says how
// bbolt's errors are told apart.
//
// The hot path never reads bbolt: the file is read only by Open, to rebuild the state.
//
// # Start-up
//
// Open reads the whole file back as a Recovered for the session layer to rebuild its tables from.
// Sessions whose expiry passed while the broker was down are removed first, and sessions that
// were connected when it stopped count as disconnected at the restart. A file that is locked by
// another process, or that this build cannot decode, makes Open fail with an error naming the file:
// starting with an empty state would silently drop every message already acknowledged. The format
// is documented in format.go.
package inflight
