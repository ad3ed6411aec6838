package inflight

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"log/slog"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// neverExpires is the Session Expiry Interval of a session that never expires.
const neverExpires = 0xFFFFFFFF

// recover reads the whole file into a Recovered in one write transaction that also removes what
// expired while the broker was down and what nothing refers to. It returns the largest message
// sequence in use. Nothing is changed if the file turns out to be corrupt.
func (j *Journal) recover(now int64) (rec *Recovered, lastSeq uint64, err error) {
	defer func() {
		if r := recover(); r != nil {
			rec, err = nil, fmt.Errorf("open %s: %w: bbolt panicked reading it: %v", j.path, ErrCorrupt, r)
		}
	}()
	err = j.db.Update(func(tx *bolt.Tx) error {
		if err := initBuckets(tx); err != nil {
			return err
		}
		bk, err := txBuckets(tx)
		if err != nil {
			return err
		}
		r := &recovery{bk: bk, now: now, log: j.log.With(slog.String("path", j.path))}
		if err := r.read(); err != nil {
			return err
		}
		if err := r.cleanUp(); err != nil {
			return fmt.Errorf("clean up: %w", err)
		}
		rec, lastSeq = r.result()
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("open %s: %w", j.path, err)
	}
	return rec, lastSeq, nil
}

// recovery is the state of one recovery transaction.
type recovery struct {
	bk  buckets
	now int64
	log *slog.Logger

	sessions  []*RecoveredSession          // live sessions, in client id order
	byClient  map[string]*RecoveredSession // live sessions
	expired   map[string]bool              // sessions to delete
	touched   []*RecoveredSession          // sessions connected at the crash, disconnected now
	msgs      map[uint64]*Message          // every message in msgs
	retained  []*Message
	lastSeq   uint64
	deletions map[*bolt.Bucket][][]byte // keys to delete: strays, broken references, orphans

	subs, inbound, outbound, queued, orphans, dropped int
}

func (r *recovery) read() error {
	r.byClient = make(map[string]*RecoveredSession)
	r.expired = make(map[string]bool)
	r.msgs = make(map[uint64]*Message)
	r.deletions = make(map[*bolt.Bucket][][]byte)
	steps := []struct {
		name string
		b    *bolt.Bucket
		fn   func(k, v []byte) error
	}{
		{"sessions", r.bk.sessions, r.readSession},
		{"subs", r.bk.subs, r.readSubscription},
		{"in", r.bk.in, r.readInbound},
		{"out", r.bk.out, r.readOutbound},
		{"queue", r.bk.queue, r.readQueued},
		{"msgs", r.bk.msgs, r.readMessage},
		{"retained", r.bk.retained, r.readRetained},
	}
	for _, s := range steps {
		err := s.b.ForEach(func(k, v []byte) error {
			if v == nil {
				return corrupt(s.name, k, fmt.Errorf("nested bucket"))
			}
			if err := s.fn(k, v); err != nil {
				return corrupt(s.name, k, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	r.resolve()
	return nil
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
func (r *recovery) owner(b *bolt.Bucket, bucket string, k []byte) (*RecoveredSession, []byte, error) {
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
		r.deleteKey(b, k)
		r.dropped++
	}
	return nil, suffix, nil
}

func (r *recovery) readSubscription(k, v []byte) error {
	s, suffix, err := r.owner(r.bk.subs, "subs", k)
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
	s, suffix, err := r.owner(r.bk.in, "in", k)
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
	s, suffix, err := r.owner(r.bk.out, "out", k)
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
	s, suffix, err := r.owner(r.bk.queue, "queue", k)
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

func (r *recovery) readMessage(k, v []byte) error {
	if len(k) != 8 || binary.BigEndian.Uint64(k) == 0 {
		return fmt.Errorf("message key is not a sequence")
	}
	m, err := decodeMessage(v)
	if err != nil {
		return err
	}
	m.Seq = binary.BigEndian.Uint64(k)
	r.msgs[m.Seq] = m
	r.lastSeq = max(r.lastSeq, m.Seq)
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
	referenced := make(map[uint64]bool)
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
		referenced[seq] = true
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
			r.deleteKey(r.bk.out, packetIDKey(s.Record.ClientID, e.PacketID))
			return true
		})
		s.Queue = slices.DeleteFunc(s.Queue, func(q QueuedRecord) bool {
			if ref(s, "queue", orderKey(s.Record.ClientID, q.Order), q.MsgSeq) {
				return false
			}
			r.deleteKey(r.bk.queue, orderKey(s.Record.ClientID, q.Order))
			return true
		})
		slices.SortStableFunc(s.Outbound, func(a, b OutboundRecord) int { return cmp.Compare(a.Order, b.Order) })
		slices.SortStableFunc(s.Queue, func(a, b QueuedRecord) int { return cmp.Compare(a.Order, b.Order) })
		r.outbound += len(s.Outbound)
		r.queued += len(s.Queue)
	}
	for seq := range r.msgs {
		if !referenced[seq] {
			r.deleteKey(r.bk.msgs, seqKey(seq))
			delete(r.msgs, seq)
			r.orphans++
		}
	}
}

func (r *recovery) deleteKey(b *bolt.Bucket, k []byte) {
	r.deletions[b] = append(r.deletions[b], append([]byte(nil), k...))
}

// cleanUp writes what recovery decided: expired sessions and unreferenced keys go, sessions that
// were connected get their disconnection time.
func (r *recovery) cleanUp() error {
	for clientID := range r.expired {
		if err := r.bk.deleteSession(clientID); err != nil {
			return fmt.Errorf("delete expired session %q: %w", clientID, err)
		}
	}
	for b, keys := range r.deletions {
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return fmt.Errorf("delete %q: %w", k, err)
			}
		}
	}
	for _, s := range r.touched {
		v, err := encodeJSON(&s.Record)
		if err != nil {
			return fmt.Errorf("encode session %q: %w", s.Record.ClientID, err)
		}
		if err := r.bk.sessions.Put([]byte(s.Record.ClientID), v); err != nil {
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
	rec := &Recovered{Retained: r.retained, Messages: r.msgs, Expired: len(r.expired)}
	for _, s := range r.sessions {
		rec.Sessions = append(rec.Sessions, *s)
	}
	r.log.Info("inflight: recovered",
		slog.Int("sessions", len(r.sessions)), slog.Int("subscriptions", r.subs),
		slog.Int("inbound", r.inbound), slog.Int("outbound", r.outbound), slog.Int("queued", r.queued),
		slog.Int("messages", len(r.msgs)), slog.Int("retained", len(r.retained)),
		slog.Int("expired", len(r.expired)), slog.Int("orphans_removed", r.orphans),
		slog.Int("broken_removed", r.dropped))
	return rec, r.lastSeq
}
