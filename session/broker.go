package session

import (
	"log/slog"
	"sync"
	"time"

	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/topic"
)

// Options configures a Broker. Zero values mean defaults.
type Options struct {
	MaxQueued        int             // messages a session may have queued; default DefaultMaxQueued
	MaxQueuedBytes   int64           // bytes of bodies a session may hold, queued or in flight; default DefaultMaxQueuedBytes
	QueueFull        QueueFullPolicy // what a full session does to a new QoS 1 or 2 message; default RefuseWhenFull
	MaxSubscriptions int             // subscriptions per session; default DefaultMaxSubscriptions
	MaxSessions      int             // sessions held, online or not; default DefaultMaxSessions
	MaxRetained      int             // retained messages; default DefaultMaxRetained
	MaxRetainedBytes int64           // bytes of retained bodies; default DefaultMaxRetainedBytes
	Logger           *slog.Logger    // default slog.Default()
	Now              func() time.Time

	// MayRead decides whether the session of clientID, whose client authenticated as username, may
	// receive a message published on topic. nil allows everything. It is asked for every matching
	// session when a message is routed and for every retained message sent on SUBSCRIBE; a message
	// it refuses is not delivered to that session and is counted in Metrics.NotAuthorized.
	//
	// It is called with Broker.mu held: it must be quick, must not block, and must not call back
	// into the Broker.
	MayRead func(clientID, username, topic string) bool

	// OnDrop is told of every message dropped on purpose for a session (see DropReason), as the
	// drop is counted in Metrics. nil means no one is told.
	//
	// It is called with Broker.mu held: it must not block and must not call back into the Broker.
	OnDrop func(clientID, topic string, why DropReason)

	// Metrics is where the broker counts; nil means counters of its own. A caller that replaces
	// its Broker (package mqtt does when it reopens a store that failed) passes the same Metrics
	// to each, so that the counts run on.
	Metrics *Metrics
	// Dedup configures duplicate detection by the publisher's dedup id; the zero value is off.
	Dedup DedupOptions
	// OnRefuse is told of every QoS 1 or 2 PUBLISH refused because the queue of the session
	// clientID is full (RefuseWhenFull), or because the retained messages are at their limit
	// (clientID ""). It is called with Broker.mu held, like OnDrop.
	OnRefuse func(clientID, topic string)
}

// Journal is what the session layer needs of the durable journal. *inflight.Journal implements it;
// the session tests use a fake that commits when the test says so.
type Journal interface {
	// Submit hands a batch to the committer and returns at once; done runs after the batch is
	// committed (nil) or cannot be (the error), after the done of every batch submitted before.
	Submit(batch *inflight.Batch, done func(error))
	// NextSeq returns a new message sequence, larger than every one before.
	NextSeq() uint64
	// Err is non-nil once a commit failed; the journal then refuses every later batch.
	Err() error
	// LoadMessage returns the body of a stored message, from memory or from the file. It is
	// called under Broker.mu when a PUBLISH is about to be sent; it takes no lock of the broker.
	LoadMessage(seq uint64) (*inflight.Message, error)
}

// Broker is the session registry and router.
//
// Lock order: Broker.mu, then the journal's lock (Submit is called with Broker.mu held), then a
// Conn's own lock (Send and Close are called with Broker.mu held). Nothing below Broker.mu calls
// back into the Broker.
type Broker struct {
	journal Journal
	log     *slog.Logger
	now     func() time.Time
	opts    Options

	// Metrics counts drops, refusals and failures. Its counters are atomic: read them at any time.
	Metrics *Metrics

	mu       sync.Mutex // guards the following and every Session
	sessions map[string]*Session
	subs     *topic.Index[inflight.SubscriptionRecord]
	retained map[string]*inflight.Message
	dedup    dedupState
	volatile map[string]*inflight.Message // retained in memory only (PublishVolatile)
	shared   sharedState                  // shared subscription groups (shared.go)
	closed   bool

	retainedBytes int64 // bytes of the retained messages' bodies
}

// New builds the broker's working state from what the journal recovered (rec may be nil: nothing);
// it takes the queues out of rec, so that start-up holds each once.
func New(j Journal, rec *inflight.Recovered, opts Options) *Broker {
	opts.setLimitDefaults()
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Metrics == nil {
		opts.Metrics = new(Metrics)
	}
	b := &Broker{
		Metrics:  opts.Metrics,
		journal:  j,
		log:      opts.Logger,
		now:      opts.Now,
		opts:     opts,
		sessions: make(map[string]*Session),
		subs:     topic.NewIndex[inflight.SubscriptionRecord](),
		retained: make(map[string]*inflight.Message),
		dedup:    dedupState{window: newDedupWindow()},
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

// stopTimer stops *t, if any, and clears it. Caller holds b.mu.
func stopTimer(t **time.Timer) {
	if *t != nil {
		(*t).Stop()
		*t = nil
	}
}
