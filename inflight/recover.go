package inflight

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// neverExpires is the Session Expiry Interval of a session that never expires.
const neverExpires = 0xFFFFFFFF

// recoverState brings the file up to date with what start-up decided, in one write transaction: buckets
// created, expired sessions and unreferenced keys removed, connected sessions marked disconnected.
// pre is what inspect read through a read-only handle; it is read again here if the file changed
// since (or was empty). It returns the state and the largest message sequence in use.
func (j *Journal) recoverState(pre *recovery, now int64) (rec *Recovered, lastSeq uint64, err error) {
	r := pre
	err = guard(func() error {
		return j.db.Update(func(tx *bolt.Tx) error {
			if err := initBuckets(tx); err != nil {
				return err
			}
			if r == nil || tx.ID() != r.txid+1 {
				var err error
				if r, err = readState(tx, now, j.log.With(slog.String("path", j.path))); err != nil {
					return err
				}
			}
			if err := r.cleanUp(tx); err != nil {
				return fmt.Errorf("clean up: %w", err)
			}
			return nil
		})
	})
	if err != nil {
		return nil, 0, fmt.Errorf("open %s: %w", j.path, err)
	}
	rec, lastSeq = r.result()
	return rec, lastSeq, nil
}

// inspect reads and decodes the whole file through a read-only handle. bbolt checks every page
// when a file is opened for writing without a synced free list, in a goroutine of its own where a
// panic on a damaged page cannot be recovered and would kill the broker with a bbolt stack trace;
// reading every page here first, where a panic can be recovered, turns damage into an error that
// names the file.
func inspect(path string, now int64, log *slog.Logger) (*recovery, error) {
	db, err := openBolt(path, true, true)
	if err != nil {
		return nil, err
	}
	defer closeQuietly(db)
	r, err := readFile(db, now, log.With(slog.String("path", path)))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return r, nil
}

// readFile reads the whole state of db in one read transaction, a panic on a damaged page turned
// into ErrCorrupt (guard). Open and Inspect both read a file this way.
func readFile(db *bolt.DB, now int64, log *slog.Logger) (r *recovery, err error) {
	err = guard(func() error {
		return db.View(func(tx *bolt.Tx) error {
			if err := checkFormat(tx); err != nil {
				return err
			}
			var err error
			r, err = readState(tx, now, log)
			return err
		})
	})
	return r, err
}

// guard runs fn, turning a panic or a memory fault (bbolt reading a damaged page through its memory
// map) into an error.
func guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: bbolt panicked reading it: %v", ErrCorrupt, r)
		}
	}()
	return fn()
}

// recoveryBuckets are the buckets readState reads, in its order: sessions first, so that every
// other entry finds its session.
// Bodies (bucket msgs) are not read: the index (msgidx) stands for them, unless the file predates it
// (indexFromBodies).
var recoveryBuckets = [][]byte{bucketSessions, bucketSubs, bucketIn, bucketOut, bucketQueue, bucketMsgIdx, bucketRetained, bucketDedup}

// recovery is the state of one recovery transaction.
type recovery struct {
	txid int // the transaction read: the file's version
	now  int64
	log  *slog.Logger

	sessions  []*RecoveredSession          // live sessions, in client id order
	byClient  map[string]*RecoveredSession // live sessions
	expired   map[string]bool              // sessions to delete
	wills     []ExpiredWill                // wills of the expired sessions
	touched   []*RecoveredSession          // sessions connected at the crash, disconnected now
	msgs      map[uint64]*Handle           // every message in msgidx
	rebuilt   map[uint64]messageIndex      // index records built from msgs, for a file without msgidx
	indexed   []uint64                     // the keys of msgidx in order, for matchBodies
	handles   []Handle                     // the rest of the chunk readIndex takes handles from
	retained  []*Message
	lastSeq   uint64
	deletions map[string][][]byte // by bucket: strays, broken references, orphans
	dedup     []DedupRecord       // every dedup id in the file, in key order

	subs, inbound, outbound, queued, orphans, dropped int
}

// readState decodes every bucket of tx and decides what start-up removes. A file without buckets
// (new, or never initialised) reads as empty.
func readState(tx *bolt.Tx, now int64, log *slog.Logger) (*recovery, error) {
	r := &recovery{
		txid:      tx.ID(),
		now:       now,
		log:       log,
		byClient:  make(map[string]*RecoveredSession),
		expired:   make(map[string]bool),
		msgs:      make(map[uint64]*Handle),
		deletions: make(map[string][][]byte),
	}
	readers := []func(k, v []byte) error{r.readSession, r.readSubscription, r.readInbound, r.readOutbound,
		r.readQueued, r.readIndex, r.readRetained, r.readDedup}
	prog := newProgress(log, time.Now, progressEvery, func() int { return countRecords(tx) })
	if idx := tx.Bucket(bucketMsgIdx); idx != nil {
		// Sized once: a million messages would otherwise grow the map some twenty times. Stats
		// reads the page headers only.
		r.msgs = make(map[uint64]*Handle, idx.Stats().KeyN)
	}
	for i, name := range recoveryBuckets {
		read := readers[i]
		if indexFromBodies(tx) && bytes.Equal(name, bucketMsgIdx) {
			name, read = bucketMsgs, r.readBody
		}
		b := tx.Bucket(name)
		if b == nil {
			continue
		}
		var prev []byte // bbolt memory, valid for the whole transaction
		err := b.ForEach(func(k, v []byte) error {
			if prev != nil && bytes.Compare(prev, k) >= 0 {
				return corrupt(string(name), k, fmt.Errorf("key out of order after %q", prev))
			}
			prev = k
			prog.step()
			if v == nil {
				return corrupt(string(name), k, fmt.Errorf("nested bucket"))
			}
			if err := read(k, v); err != nil {
				return corrupt(string(name), k, err)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if !indexFromBodies(tx) {
		if err := r.matchBodies(tx); err != nil {
			return nil, err
		}
	}
	r.resolve()
	return r, nil
}

// matchBodies walks the keys of bucket msgs, not their values, alongside the index: a body without
// an index record is removed, an index record without a body is removed and the entries that refer
// to it are dropped (resolve, with a warning). Walking the keys also reads every page of the bucket
// here, where a damaged page is an error that names the file, before bbolt opens it for writing and
// checks every page where a panic cannot be recovered. The values (the bodies) are not touched.
func (r *recovery) matchBodies(tx *bolt.Tx) error {
	b := tx.Bucket(bucketMsgs)
	if b == nil {
		return nil
	}
	seqs := r.indexed
	var prev []byte
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			return corrupt("msgs", k, fmt.Errorf("key out of order after %q", prev))
		}
		prev = k
		if v == nil {
			return corrupt("msgs", k, fmt.Errorf("nested bucket"))
		}
		seq, err := messageSeq(k)
		if err != nil {
			return corrupt("msgs", k, err)
		}
		for len(seqs) > 0 && seqs[0] < seq {
			r.bodyMissing(seqs[0])
			seqs = seqs[1:]
		}
		if len(seqs) > 0 && seqs[0] == seq {
			seqs = seqs[1:]
			continue
		}
		r.log.Warn("inflight: message body without an index record: removed", slog.Uint64("seq", seq))
		r.deleteKey("msgs", k)
		r.orphans++
	}
	for _, seq := range seqs {
		r.bodyMissing(seq)
	}
	r.indexed = nil
	return nil
}

// bodyMissing forgets an index record whose body is not in the file.
func (r *recovery) bodyMissing(seq uint64) {
	r.log.Warn("inflight: index record without a message body: removed", slog.Uint64("seq", seq))
	delete(r.msgs, seq)
	r.deleteKey("msgidx", seqKey(seq))
}

// corrupt names the bucket and key of a value that cannot be decoded.
func corrupt(bucket string, key []byte, err error) error {
	return fmt.Errorf("bucket %s key %q: %w: %w", bucket, key, ErrCorrupt, err)
}

func (r *recovery) readSession(k, v []byte) error {
	var s SessionRecord
	if err := decodeJSON(v, &s); err != nil {
		return err
	}
	if s.ClientID != string(k) || !validName(s.ClientID) {
		return fmt.Errorf("session record names client %q", s.ClientID)
	}
	if s.Will != nil && s.Will.Message == nil {
		return fmt.Errorf("will without a message")
	}
	if s.ExpiryInterval == 0 || s.ExpiryInterval != neverExpires && s.DisconnectedAt != 0 &&
		s.DisconnectedAt+int64(s.ExpiryInterval)*1e9 <= r.now {
		// An interval of 0 ends the session with its connection, and the crash ended that.
		r.expired[s.ClientID] = true
		if s.Will != nil {
			// The session ended while the broker was down: its will is due [MQTT-3.1.3-9].
			r.wills = append(r.wills, ExpiredWill{ClientID: s.ClientID, Will: s.Will})
		}
		return nil
	}
	rs := &RecoveredSession{Record: s}
	if s.DisconnectedAt == 0 {
		rs.Record.DisconnectedAt = r.now
		r.touched = append(r.touched, rs)
	}
	r.sessions = append(r.sessions, rs)
	r.byClient[s.ClientID] = rs
	return nil
}

// owner returns the live session a per-client key belongs to, or nil if the entry goes: with its
// expired session, or as a stray whose session record is missing.
func (r *recovery) owner(bucket string, k []byte) (*RecoveredSession, []byte, error) {
	clientID, suffix, ok := splitKey(k)
	if !ok {
		return nil, nil, fmt.Errorf("key has no client id")
	}
	if s := r.byClient[clientID]; s != nil {
		return s, suffix, nil
	}
	if !r.expired[clientID] {
		r.log.Warn("inflight: entry without a session record: removed", slog.String("bucket", bucket),
			slog.String("client", clientID), slog.String("key", fmt.Sprintf("%q", k)))
		r.deleteKey(bucket, k)
		r.dropped++
	}
	return nil, suffix, nil
}

func (r *recovery) readSubscription(k, v []byte) error {
	s, suffix, err := r.owner("subs", k)
	if err != nil {
		return err
	}
	var sub SubscriptionRecord
	if err := decodeJSON(v, &sub); err != nil {
		return err
	}
	if sub.Filter != string(suffix) {
		return fmt.Errorf("subscription record names filter %q", sub.Filter)
	}
	if s != nil {
		s.Subscriptions = append(s.Subscriptions, sub)
		r.subs++
	}
	return nil
}

func packetIDSuffix(suffix []byte) (uint16, error) {
	if len(suffix) != 2 {
		return 0, fmt.Errorf("packet id is %d bytes, want 2", len(suffix))
	}
	id := binary.BigEndian.Uint16(suffix)
	if id == 0 {
		return 0, fmt.Errorf("packet id 0")
	}
	return id, nil
}

func (r *recovery) readInbound(k, v []byte) error {
	s, suffix, err := r.owner("in", k)
	if err != nil {
		return err
	}
	id, err := packetIDSuffix(suffix)
	if err != nil {
		return err
	}
	reason, err := decodeInbound(v)
	if err != nil {
		return err
	}
	if s != nil {
		s.Inbound = append(s.Inbound, InboundRecord{PacketID: id, Reason: reason})
		r.inbound++
	}
	return nil
}

func (r *recovery) readOutbound(k, v []byte) error {
	s, suffix, err := r.owner("out", k)
	if err != nil {
		return err
	}
	id, err := packetIDSuffix(suffix)
	if err != nil {
		return err
	}
	e, err := decodeOutbound(v, id)
	if err != nil {
		return err
	}
	r.lastSeq = max(r.lastSeq, e.MsgSeq)
	if s != nil {
		s.Outbound = append(s.Outbound, e)
	}
	return nil
}

func (r *recovery) readQueued(k, v []byte) error {
	s, suffix, err := r.owner("queue", k)
	if err != nil {
		return err
	}
	if len(suffix) != 8 {
		return fmt.Errorf("order is %d bytes, want 8", len(suffix))
	}
	q, err := decodeQueued(v)
	if err != nil {
		return err
	}
	if q.Order != binary.BigEndian.Uint64(suffix) {
		return fmt.Errorf("queue record has order %d", q.Order)
	}
	r.lastSeq = max(r.lastSeq, q.MsgSeq)
	if s != nil {
		s.Queue = append(s.Queue, q)
	}
	return nil
}

// indexFromBodies reports whether the file predates bucket msgidx: msgs has records and msgidx
// none (a missing bucket, or one that Open has just created). Recovery then reads the bodies
// once and writes their index.
func indexFromBodies(tx *bolt.Tx) bool {
	idx, msgs := tx.Bucket(bucketMsgIdx), tx.Bucket(bucketMsgs)
	if msgs == nil {
		return false
	}
	if k, _ := msgs.Cursor().First(); k == nil {
		return false
	}
	if idx == nil {
		return true
	}
	k, _ := idx.Cursor().First()
	return k == nil
}

func messageSeq(k []byte) (uint64, error) {
	if len(k) != 8 || binary.BigEndian.Uint64(k) == 0 {
		return 0, fmt.Errorf("message key is not a sequence")
	}
	return binary.BigEndian.Uint64(k), nil
}

// handleChunk is how many Handles recovery allocates at once.
const handleChunk = 1024

// readIndex reads one index record: the message as the broker keeps it in memory.
func (r *recovery) readIndex(k, v []byte) error {
	seq, err := messageSeq(k)
	if err != nil {
		return err
	}
	x, err := decodeIndex(v)
	if err != nil {
		return err
	}
	if len(r.handles) == 0 {
		r.handles = make([]Handle, handleChunk) // one allocation for many: start-up time and memory
	}
	h := &r.handles[0]
	r.handles = r.handles[1:]
	*h = Handle{Seq: seq, ExpiresAt: x.expiresAt, Payload: x.payloadLen, Topic: x.topicLen}
	r.msgs[seq] = h
	r.indexed = append(r.indexed, seq)
	r.lastSeq = max(r.lastSeq, seq)
	return nil
}

// readBody reads one body of a file without msgidx and notes the index record to write.
func (r *recovery) readBody(k, v []byte) error {
	seq, err := messageSeq(k)
	if err != nil {
		return err
	}
	m, err := decodeBody(v)
	if err != nil {
		return err
	}
	x := indexOf(m)
	if r.rebuilt == nil {
		r.rebuilt = make(map[uint64]messageIndex)
	}
	r.rebuilt[seq] = x
	r.msgs[seq] = x.handle(seq)
	r.lastSeq = max(r.lastSeq, seq)
	return nil
}

func (r *recovery) readRetained(k, v []byte) error {
	m, err := decodeMessage(v)
	if err != nil {
		return err
	}
	if m.Topic != string(k) {
		return fmt.Errorf("retained message has topic %q", m.Topic)
	}
	r.retained = append(r.retained, m)
	return nil
}

// resolve counts the references to each message, drops the entries whose message is missing, and
// marks the unreferenced messages for deletion.
func (r *recovery) resolve() {
	ref := func(s *RecoveredSession, bucket string, key []byte, seq uint64) bool {
		m := r.msgs[seq]
		if m == nil {
			// Batches are atomic, so this is damage, not a crash: say which client lost what.
			r.log.Warn("inflight: entry refers to a missing message: removed", slog.String("bucket", bucket),
				slog.String("client", s.Record.ClientID), slog.Uint64("seq", seq), slog.String("key", fmt.Sprintf("%q", key)))
			r.dropped++
			return false
		}
		m.Ref()
		return true
	}
	for _, s := range r.sessions {
		s.Outbound = slices.DeleteFunc(s.Outbound, func(e OutboundRecord) bool {
			if e.MsgSeq == 0 && e.State == PubrelSent {
				return false // the message was released with the PUBREC
			}
			if ref(s, "out", packetIDKey(s.Record.ClientID, e.PacketID), e.MsgSeq) {
				return false
			}
			r.deleteKey("out", packetIDKey(s.Record.ClientID, e.PacketID))
			return true
		})
		s.Queue = slices.DeleteFunc(s.Queue, func(q QueuedRecord) bool {
			if ref(s, "queue", orderKey(s.Record.ClientID, q.Order), q.MsgSeq) {
				return false
			}
			r.deleteKey("queue", orderKey(s.Record.ClientID, q.Order))
			return true
		})
		slices.SortStableFunc(s.Outbound, func(a, b OutboundRecord) int { return cmp.Compare(a.Order, b.Order) })
		slices.SortStableFunc(s.Queue, func(a, b QueuedRecord) int { return cmp.Compare(a.Order, b.Order) })
		r.outbound += len(s.Outbound)
		r.queued += len(s.Queue)
	}
	for seq, m := range r.msgs {
		if m.refs.Load() == 0 { // no entry referred to it (counted above)
			r.deleteKey("msgs", seqKey(seq))
			r.deleteKey("msgidx", seqKey(seq))
			delete(r.msgs, seq)
			delete(r.rebuilt, seq)
			r.orphans++
		}
	}
}

func (r *recovery) deleteKey(bucket string, k []byte) {
	r.deletions[bucket] = append(r.deletions[bucket], bytes.Clone(k))
}

// cleanUp writes what recovery decided: expired sessions and unreferenced keys go, sessions that
// were connected get their disconnection time.
func (r *recovery) cleanUp(tx *bolt.Tx) error {
	bk, err := txBuckets(tx)
	if err != nil {
		return err
	}
	for clientID := range r.expired {
		if err := bk.deleteSession(clientID); err != nil {
			return fmt.Errorf("delete expired session %q: %w", clientID, err)
		}
	}
	for seq, x := range r.rebuilt {
		if err := bk.msgidx.Put(seqKey(seq), encodeIndex(x)); err != nil {
			return fmt.Errorf("write the index of message %d: %w", seq, err)
		}
	}
	for bucket, keys := range r.deletions {
		b := tx.Bucket([]byte(bucket))
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return fmt.Errorf("delete %q from %s: %w", k, bucket, err)
			}
		}
	}
	for _, s := range r.touched {
		v, err := encodeJSON(&s.Record)
		if err != nil {
			return fmt.Errorf("encode session %q: %w", s.Record.ClientID, err)
		}
		if err := bk.sessions.Put([]byte(s.Record.ClientID), v); err != nil {
			return fmt.Errorf("store session %q: %w", s.Record.ClientID, err)
		}
	}
	return nil
}

// result builds the Recovered and logs what was found. Retained messages have no sequence on disk
// (they are stored whole under their topic); each gets a new one here, so that delivering it to a
// new subscriber (Ref, then PutMessage) writes it under a key of its own.
func (r *recovery) result() (*Recovered, uint64) {
	for _, m := range r.retained {
		r.lastSeq++
		m.Seq = r.lastSeq
	}
	rec := &Recovered{Retained: r.retained, Messages: r.msgs, Expired: len(r.expired), ExpiredWills: r.wills,
		Dedup: r.dedup}
	for _, s := range r.sessions {
		rec.Sessions = append(rec.Sessions, *s)
	}
	r.log.Info("inflight: recovered",
		slog.Int("sessions", len(r.sessions)), slog.Int("subscriptions", r.subs),
		slog.Int("inbound", r.inbound), slog.Int("outbound", r.outbound), slog.Int("queued", r.queued),
		slog.Int("messages", len(r.msgs)), slog.Int("retained", len(r.retained)),
		slog.Int("expired", len(r.expired)), slog.Int("orphans_removed", r.orphans),
		slog.Int("broken_removed", r.dropped), slog.Int("dedup_ids", len(r.dedup)))
	return rec, r.lastSeq
}
