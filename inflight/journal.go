package inflight

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrFailed is returned by every Submit after a commit failed, wrapped around ErrDiskFull or ErrIO
// (what kind of failure) and the first error.
var ErrFailed = errors.New("inflight: journal failed")

// ErrClosed is returned by Submit after Close.
var ErrClosed = errors.New("inflight: journal closed")

// Options configures Open. A nil *Options means the defaults.
type Options struct {
	// NoSync skips the sync of the log after each commit: safe against a process crash, not
	// against power loss. Checkpoints into the bbolt file are synced either way.
	NoSync bool
	// Logger receives recovery and failure messages; nil means slog.Default().
	Logger *slog.Logger
	// Now returns the current time in unix nanoseconds; nil means time.Now. Tests shift it.
	Now func() int64
	// OnFail, if not nil, is called once when a commit fails, with the error every batch gets
	// from then on (ErrFailed wrapping ErrDiskFull or ErrIO). It runs on the committer goroutine
	// before the failed batches' done callbacks: it must not block and must not call Close.
	OnFail func(error)
	// OnCommit, if set, is told of every commit the committer made: how many changes (records put
	// or deleted) its one log record carried, and how long the log append took, its sync included.
	// It runs on the committer goroutine, between the commit and the done callbacks, so it must be
	// quick (a histogram's Observe).
	OnCommit func(changes int, took time.Duration)
	// MessageCache bounds the bytes of message bodies kept in memory after they were written or
	// read (LoadMessage); 0 means DefaultMessageCache. Bodies of batches not yet committed are
	// kept besides, whatever their size: the file does not have them yet.
	MessageCache int64

	wal walOptions // test hooks (wal.go); the product leaves them zero
}

// Recovered is the durable state read by Open, for the session layer to rebuild its working copy.
type Recovered struct {
	Sessions []RecoveredSession
	Retained []*Message
	// Messages referenced by the sessions, by Seq: their index entries, not their bodies, which
	// stay in the file until LoadMessage. Each has its reference count set to the number of
	// durable entries that refer to it.
	Messages Messages
	// Expired counts sessions removed at start-up because their expiry passed while the broker
	// was down.
	Expired int
	// ExpiredWills are the wills of those sessions, due now: the session layer publishes them.
	ExpiredWills []ExpiredWill
	// Dedup is every dedup id in the file, aged or not: the session layer keeps those still in
	// its window and deletes the others in later batches.
	Dedup []DedupRecord
	// Shared is every message of the shared subscription groups' queues, by group, filter and
	// order. Each refers to Messages like a queue entry.
	Shared []SharedRecord
}

// ExpiredWill is the will of a session that ended while the broker was down.
type ExpiredWill struct {
	ClientID string
	Will     *Will
}

// RecoveredSession is one session with everything keyed by its client id.
type RecoveredSession struct {
	Record        SessionRecord
	Subscriptions []SubscriptionRecord
	Inbound       []InboundRecord  // any order
	Outbound      []OutboundRecord // sorted by Order
	Queue         []QueuedRecord   // sorted by Order
}

// Journal is the durable image of the in-flight state: one bbolt file and one committer goroutine.
type Journal struct {
	// implemented in store.go / committer.go

	path string
	db   *bolt.DB
	log  *slog.Logger
	// onCommit is Options.OnCommit; nil when no one watches.
	onCommit func(records int, took time.Duration)
	seq      atomic.Uint64 // last message sequence handed out

	onFail func(error) // Options.OnFail

	bodies bodies      // bodies of unwritten batches and the body cache
	mapped mappedBytes // body bytes through the memory map since the last releaseMapped

	mu         sync.Mutex  // guards following
	pending    []submitted // submitted, not yet taken by the committer
	closed     bool        // Close was called; Submit queues on afterClose
	afterClose []submitted // submitted after Close, answered ErrClosed by a drainer
	draining   bool        // a drainer goroutine owns afterClose

	spare   []submitted   // committer only: the previous round's slice, reused
	wake    chan struct{} // capacity 1: something was submitted, or Close
	stopped chan struct{} // closed when the committer goroutine has returned

	failure atomic.Pointer[error] // ErrFailed wrapping the first commit error; nil while healthy

	closeOnce sync.Once
	closeErr  error

	wal *writeAhead // the log in front of db (wal.go)

	commits, batches, ops, checkpoints atomic.Uint64 // see stats
	latency                            latencyHistogram
}
