package session

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/topic"
)

// Options configures a Broker. Zero values mean defaults.
type Options struct {
	MaxQueued int          // per-session queue bound; default 10000
	Logger    *slog.Logger // default slog.Default()
	Now       func() time.Time
}

// Metrics counts what the broker dropped on purpose, so that no drop is silent.
type Metrics struct {
	QueueOverflow   atomic.Uint64 // messages not queued because a session's queue was full
	Expired         atomic.Uint64 // messages dropped because their Message Expiry passed
	TooLarge        atomic.Uint64 // deliveries dropped: larger than the client's Maximum Packet Size
	SessionsExpired atomic.Uint64 // sessions removed by Session Expiry
	CommitFailures  atomic.Uint64 // batches whose commit failed
}

// Broker is the session registry and router.
type Broker struct {
	journal *inflight.Journal
	log     *slog.Logger
	now     func() time.Time
	opts    Options

	Metrics Metrics

	mu       sync.Mutex // guards the following and every Session
	sessions map[string]*Session
	subs     *topic.Index[inflight.SubscriptionRecord]
	retained map[string]*inflight.Message
	closed   bool
}

// New builds the broker's working state from what the journal recovered.
func New(j *inflight.Journal, rec *inflight.Recovered, opts Options) *Broker {
	if opts.MaxQueued <= 0 {
		opts.MaxQueued = 10000
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	b := &Broker{
		journal:  j,
		log:      opts.Logger,
		now:      opts.Now,
		opts:     opts,
		sessions: make(map[string]*Session),
		subs:     topic.NewIndex[inflight.SubscriptionRecord](),
		retained: make(map[string]*inflight.Message),
	}
	if rec != nil {
		b.restore(rec)
	}
	return b
}

// Close stops the session timers. Connections are closed by their owner.
func (b *Broker) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for _, s := range b.sessions {
		stopTimer(&s.expiry)
		stopTimer(&s.willTimer)
	}
}

// Counts reports how many sessions and retained messages the broker holds.
func (b *Broker) Counts() (sessions, retained int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.sessions), len(b.retained)
}

// JournalErr is non-nil once the journal failed; QoS 1/2 work must then be refused.
func (b *Broker) JournalErr() error { return b.journal.Err() }

func stopTimer(t **time.Timer) {
	if *t != nil {
		(*t).Stop()
		*t = nil
	}
}
