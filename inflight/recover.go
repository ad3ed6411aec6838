package inflight

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
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
//
// replay are the log records the file does not have yet (wal.go): they are applied first, in the
// same transaction, which is then the checkpoint that covers them.
func (j *Journal) recoverState(pre *recovery, now int64, replay []logRecord) (rec *Recovered, lastSeq uint64, err error) {
	r := pre
	err = guard(func() error {
		return j.db.Update(func(tx *bolt.Tx) error {
			if err := ensureBuckets(tx); err != nil {
				return err
			}
			if err := replayInKeyOrder(tx, replay); err != nil {
				return err
			}
			for _, rec := range replay {
				for _, ops := range rec.batches {
					// Applied: their messages and records go, so that the decoding below does
					// not hold them too (two full segments are tens of thousands of messages).
					// The changes stay counted for the summary (logSummary).
					clear(ops)
				}
			}
			if r == nil || tx.ID() != r.txid+1 || len(replay) > 0 {
				var err error
				if r, err = readState(tx, now, formatVersion, false, j.log.With(slog.String("path", j.path))); err != nil {
					return err
				}
				if err := r.damageError(j.path); err != nil {
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
	if logHasRecords(path) {
		// The state is read after the replay anyway, in the write transaction (recoverState),
		// where damage stops start-up and rolls the replay back: here only the pages are walked,
		// which is what must happen before bbolt walks them unguarded. Decoding the whole file
		// twice doubled the restart after a kill. The log itself is read once, after the file is
		// opened for writing (recoverWithLog): reading it here too cost a third of a second and
		// its 32 MiB and decoded batches were still on the heap while bbolt's walk mapped the
		// whole file.
		if err := walkPages(db); err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		return nil, nil
	}
	r, err := readFile(db, now, false, log.With(slog.String("path", path)))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := r.damageError(path); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return r, nil
}

// walkPages visits every key of every bucket of db in one read transaction, without decoding a
// value, and refuses a nested bucket (oncemq writes none): it touches every branch and leaf page, so that a damaged page panics here, guarded, and
// is an ErrCorrupt naming the file, not a panic in bbolt's own page walk of a handle for writing.
func walkPages(db *bolt.DB) error {
	return guard(func() error {
		return db.View(func(tx *bolt.Tx) error {
			release := &walkRelease{tx: tx}
			return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
				c := b.Cursor()
				for k, v := c.First(); k != nil; k, v = c.Next() {
					if v == nil { // bbolt's walk would follow it as a bucket's root page
						return fmt.Errorf("%w: bucket %s key %q: nested bucket", ErrCorrupt, name, abbreviate(k))
					}
					release.add(k, v)
				}
				return nil
			})
		})
	})
}

// readFile reads the whole state of db in one read transaction, a panic on a damaged page turned
// into ErrCorrupt (guard). Open, Inspect, Compact and Repair read a file this way. Damaged records
// do not fail it: they are in r.damage, for the caller to refuse or report. With bodies, every
// message body is read and checked too (the offline tools); Open reads none (readState).
func readFile(db *bolt.DB, now int64, bodies bool, log *slog.Logger) (r *recovery, err error) {
	err = guard(func() error {
		return db.View(func(tx *bolt.Tx) error {
			version, err := checkFormat(tx)
			if err != nil {
				return err
			}
			r, err = readState(tx, now, version, bodies, log)
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
			err = fmt.Errorf("%w: bbolt panicked reading it (a damaged or truncated file): %v", ErrCorrupt, r)
		}
	}()
	return fn()
}

// recoveryBuckets are the buckets readState reads, in its order: sessions first, so that every
// other entry finds its session. Bodies (bucket msgs) are not read: the index (msgidx) stands for
// them, and matchBodies walks their keys only. A format 1 file has no msgidx: its bodies are read
// in its place (readBody).
var recoveryBuckets = [][]byte{bucketSessions, bucketSubs, bucketIn, bucketOut, bucketQueue, bucketMsgIdx, bucketRetained, bucketDedup, bucketShared}

// recovery is the state of one recovery transaction.
type recovery struct {
	txid    int  // the transaction read: the file's version
	version byte // the format version of the file: formatV1 values carry no checksum
	now     int64
	log     *slog.Logger

	damage         []Damage        // damaged records, and those that depend on them
	damagedClients map[string]bool // clients whose session record is damaged
	damagedSeqs    map[uint64]bool // messages whose record is damaged
	damagedBodies  map[uint64]bool // messages whose body is damaged (read by inspect and repair only)
	strays         []Damage        // entries without a session record, which start-up removes

	sessions  []*RecoveredSession          // live sessions, in client id order
	byClient  map[string]*RecoveredSession // live sessions
	expired   map[string]bool              // sessions to delete
	wills     []ExpiredWill                // wills of the expired sessions
	touched   []*RecoveredSession          // sessions connected at the crash, disconnected now
	lastOwner *RecoveredSession            // the session of the last per-client key read (owner)
	queueOf   *RecoveredSession            // the session whose queue records queueBuf gathers
	queueBuf  []QueuedRecord
	seqs      []uint64  // the keys of msgidx in order: every message's sequence
	msgs      []*Handle // their Handles, at the same index; nil for a message forgotten (damaged, missing body)
	handles   []Handle  // the rest of the chunk readIndex takes handles from
	retained  []*Message
	lastSeq   uint64
	deletions map[string][][]byte // by bucket: strays, broken references, orphans
	dedup     []DedupRecord       // every dedup id in the file, in key order
	shared    []SharedRecord      // every group queue record, in key order

	subs, inbound, outbound, queued, orphans, dropped int
}

// readState decodes every bucket of tx and decides what start-up removes. A record that fails its
// checksum or cannot be decoded is collected in r.damage, with the entries that depend on it, and
// the reading goes on, so that one pass finds all of it; the error is for a file that cannot be read
// at all. version is the file's format version (checkFormat). Message bodies are read and checked
// only with bodies (inspect, repair): start-up reads none, a body is checked when it is read to be
// sent (LoadMessage).
func readState(tx *bolt.Tx, now int64, version byte, bodies bool, log *slog.Logger) (*recovery, error) {
	r := &recovery{
		txid:           tx.ID(),
		version:        version,
		now:            now,
		log:            log,
		byClient:       make(map[string]*RecoveredSession),
		expired:        make(map[string]bool),
		deletions:      make(map[string][][]byte),
		damagedClients: make(map[string]bool),
		damagedSeqs:    make(map[uint64]bool),
	}
	readers := []func(k, v []byte) error{r.readSession, r.readSubscription, r.readInbound, r.readOutbound,
		r.readQueued, r.readIndex, r.readRetained, r.readDedup, r.readShared}
	if version != formatV1 {
		r.checkBuckets(tx)
	}
	if idx := tx.Bucket(bucketMsgIdx); idx != nil {
		// Sized once: a million messages would otherwise grow the slices some thirty times.
		// Stats reads the page headers only.
		n := idx.Stats().KeyN
		r.seqs, r.msgs = make([]uint64, 0, n), make([]*Handle, 0, n)
	}
	prog := newProgress(log, time.Now, progressEvery, func() int { return countRecords(tx) })
	release := &walkRelease{tx: tx}
	for i, name := range recoveryBuckets {
		read := readers[i]
		if version == formatV1 && bytes.Equal(name, bucketMsgIdx) {
			name, read = bucketMsgs, r.readBody // format 1 has no index: migration writes it
		}
		b := tx.Bucket(name)
		if b == nil && version != formatV1 {
			b, _ = findBucket(tx, name) // checkBuckets has recorded it as damage
		}
		if b == nil {
			continue
		}
		var prev []byte // bbolt memory, valid for the whole transaction
		err := b.ForEach(func(k, v []byte) error {
			prog.step()
			release.add(k, v)
			if v == nil {
				r.damaged(string(name), k, fmt.Errorf("nested bucket"))
				return nil
			}
			v, err := r.value(name, k, v)
			if err != nil {
				r.damaged(string(name), k, err)
				r.damage[len(r.damage)-1].unplaced = true
				return nil
			}
			// The order is checked against the last intact key only: a damaged key (found by
			// its checksum) must not make every key after it look out of order.
			if prev != nil && bytes.Compare(prev, k) >= 0 {
				r.damaged(string(name), k, fmt.Errorf("key out of order after %q", abbreviate(prev)))
				r.damage[len(r.damage)-1].unplaced = true
				return nil
			}
			prev = k
			if err := read(k, v); err != nil {
				r.damaged(string(name), k, err)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	r.flushQueue()
	r.queueBuf = nil
	if version != formatV1 {
		r.matchBodies(tx, bodies, release)
	}
	r.resolve()
	return r, nil
}

// matchBodies walks bucket msgs alongside the index. Both records of a message are written and
// deleted in one batch, so a body without its index record, or an index record without its body,
// is damage; the entries that refer to such a message depend on it (resolve). Only the keys are
// read, not the bodies, unless bodies is set: then every body is checked against its checksum and
// decoded, and a damaged one is collected with the entries that depend on it. Walking the keys
// also reads every page of the bucket here, where a damaged page is an error that names the file,
// before bbolt opens it for writing and checks every page where a panic cannot be recovered.
func (r *recovery) matchBodies(tx *bolt.Tx, bodies bool, release *walkRelease) {
	b, _ := findBucket(tx, bucketMsgs) // checkBuckets has recorded a damaged name
	if b == nil {
		return
	}
	next := 0 // the index record matched next
	var prev []byte
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v == nil {
			r.damaged("msgs", k, fmt.Errorf("nested bucket"))
			continue
		}
		release.add(k, v)
		if bodies {
			body, err := unseal(bucketMsgs, k, v)
			if err != nil {
				r.damaged("msgs", k, err)
				r.damage[len(r.damage)-1].unplaced = true
				r.bodyDamaged(k) // present, so not missing: bodyMissing skips it
				continue
			}
			v = body
		}
		// As in readState: checked against the last intact key only.
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			r.damaged("msgs", k, fmt.Errorf("key out of order after %q", abbreviate(prev)))
			r.damage[len(r.damage)-1].unplaced = true
			continue
		}
		prev = k
		seq, err := messageSeq(k)
		if err != nil {
			r.damaged("msgs", k, err)
			continue
		}
		for next < len(r.seqs) && r.seqs[next] < seq {
			r.bodyMissing(next)
			next++
		}
		if next == len(r.seqs) || r.seqs[next] != seq {
			if r.damagedSeqs[seq] { // its index record is damaged: the body goes with it
				d := describe("msgs", k, "its index record is damaged")
				d.Dependent = true
				r.damage = append(r.damage, d)
			} else {
				r.damaged("msgs", k, errors.New("body without its index record (msgidx)"))
			}
			continue
		}
		next++
		if bodies {
			if _, err := decodeBody(v); err != nil {
				r.damaged("msgs", k, err)
				r.bodyDamaged(k)
			}
		}
	}
	for ; next < len(r.seqs); next++ {
		r.bodyMissing(next)
	}
}

// bodyMissing records an index record whose body is not in the file as damage, and forgets the
// message, so that the entries that refer to it depend on damage. A body found damaged is there:
// it is listed as such, not as missing.
func (r *recovery) bodyMissing(i int) {
	seq := r.seqs[i]
	if r.damagedBodies[seq] {
		return
	}
	r.damaged("msgidx", seqKey(seq), errors.New("index record without its body (msgs)"))
	r.msgs[i] = nil
}

// bodyDamaged forgets the message of a damaged body, so that the entries that refer to it depend
// on damage (its index record is left out with it: repair writes index records from bodies).
func (r *recovery) bodyDamaged(k []byte) {
	if seq, err := messageSeq(k); err == nil {
		if i, ok := slices.BinarySearch(r.seqs, seq); ok {
			r.msgs[i] = nil
		}
		if r.damagedBodies == nil {
			r.damagedBodies = make(map[uint64]bool)
		}
		r.damagedBodies[seq] = true
	}
}

// checkBuckets records as damage a bucket of a format 2 file that is missing (every one is created
// with the file) and a bucket whose name no release writes. bbolt keeps the bucket names in the
// root page without a checksum, so a flipped bit there hides a whole bucket: without this check its
// records would be skipped in silence (a queue bucket's entries gone, their messages removed as
// orphans) and the broker would start without them. A bucket found under a damaged name (see
// findBucket) is read as the bucket it is, so that its records are checked and repair keeps them.
func (r *recovery) checkBuckets(tx *bolt.Tx) {
	found := make(map[string]bool)
	for _, name := range allBuckets {
		if tx.Bucket(name) != nil {
			continue
		}
		if _, as := findBucket(tx, name); as != nil {
			found[string(as)] = true
			r.damage = append(r.damage, Damage{Bucket: string(name), unplaced: true,
				Problem: fmt.Sprintf("found under the damaged name %q (its records' checksums name it); repair restores the name", as)})
			continue
		}
		r.damage = append(r.damage, Damage{Bucket: string(name), Problem: "missing: its name in the file's root page may be damaged", unplaced: true})
	}
	_ = tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		if !knownBucket(name) && !found[string(name)] {
			n := 0
			if b != nil {
				n = b.Stats().KeyN
			}
			r.damage = append(r.damage, Damage{Bucket: string(name),
				Problem: fmt.Sprintf("unknown bucket holding %d records, left out by repair", n), unplaced: true})
		}
		return nil
	})
}

func knownBucket(name []byte) bool {
	return slices.ContainsFunc(allBuckets, func(b []byte) bool { return bytes.Equal(b, name) })
}

// findBucket returns bucket name of a format 2 file, or, when the root page has lost that name to
// damage, the unknown bucket whose records' checksums (which cover the bucket name) verify under
// name for more than half of them, and the name it was found under. It returns nil, nil when
// neither exists.
func findBucket(tx *bolt.Tx, name []byte) (b *bolt.Bucket, foundAs []byte) {
	if b := tx.Bucket(name); b != nil {
		return b, nil
	}
	_ = tx.ForEach(func(other []byte, ob *bolt.Bucket) error {
		if ob == nil || knownBucket(other) {
			return nil
		}
		good, all := 0, 0
		_ = ob.ForEach(func(k, v []byte) error {
			all++
			if v != nil {
				if _, err := unseal(name, k, v); err == nil {
					good++
				}
			}
			return nil
		})
		if good > 0 && 2*good > all {
			b, foundAs = ob, bytes.Clone(other)
			return errFound
		}
		return nil
	})
	return b, foundAs
}

var errFound = errors.New("found")

// value returns a stored value without its checksum, checked; a format 1 value has none.
func (r *recovery) value(bucket, k, v []byte) ([]byte, error) {
	if r.version == formatV1 {
		return v, nil
	}
	return unseal(bucket, k, v)
}

// damaged records a record that cannot be trusted, and remembers the session or message it was,
// so that the entries depending on it are found too.
func (r *recovery) damaged(bucket string, k []byte, err error) {
	d := describe(bucket, k, err.Error())
	switch bucket {
	case "sessions":
		r.damagedClients[d.ClientID] = true
	case "msgs", "msgidx":
		r.damagedSeqs[d.Seq] = true
	}
	r.damage = append(r.damage, d)
}

// dependent records an intact entry that refers to a damaged or missing record.
func (r *recovery) dependent(bucket string, k []byte, problem string) {
	d := describe(bucket, k, problem)
	d.Dependent = true
	r.damage = append(r.damage, d)
}

// damageError is the error for a file with damaged records, nil for one without.
func (r *recovery) damageError(path string) error {
	if len(r.damage) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrCorrupt, &DamageError{Path: path, Records: r.damage})
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
	i := bytes.IndexByte(k, 0)
	if i <= 0 {
		return nil, nil, fmt.Errorf("key has no client id")
	}
	id, suffix := k[:i], k[i+1:]
	// A client's keys are contiguous: most keys belong to the session of the key before. Neither
	// comparison nor lookup converts the key to a string, which allocated once per record.
	if s := r.lastOwner; s != nil && s.Record.ClientID == string(id) {
		return s, suffix, nil
	}
	if s := r.byClient[string(id)]; s != nil {
		r.lastOwner = s
		return s, suffix, nil
	}
	clientID := string(id)
	if r.damagedClients[clientID] {
		r.dependent(bucket, k, fmt.Sprintf("the session record of client %q is damaged", clientID))
		return nil, suffix, nil
	}
	if !r.expired[clientID] {
		r.strays = append(r.strays, describe(bucket, k, "no session record"))
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
		r.queueRecord(s, q)
	}
	return nil
}

// queueRecord adds q to the queue of s. A client's queue records are contiguous in key order, so
// they gather in one reused buffer and go to the session in one slice of their size when the
// next client's begin (flushQueue), instead of growing every queue by doubling: for a million
// queued messages that was twice the copying and as much garbage again as the queues.
func (r *recovery) queueRecord(s *RecoveredSession, q QueuedRecord) {
	if r.queueOf != s {
		r.flushQueue()
		r.queueOf = s
	}
	r.queueBuf = append(r.queueBuf, q)
}

// flushQueue hands the gathered queue records to their session.
func (r *recovery) flushQueue() {
	if r.queueOf != nil {
		r.queueOf.Queue = append(r.queueOf.Queue, r.queueBuf...)
	}
	clear(r.queueBuf) // the buffer must not keep subscription ids alive
	r.queueBuf, r.queueOf = r.queueBuf[:0], nil
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
	r.addMessage(h) // in key order: readState skips a key out of order
	r.lastSeq = max(r.lastSeq, seq)
	return nil
}

// addMessage adds the Handle of the message after the last one added, in sequence order.
func (r *recovery) addMessage(h *Handle) {
	r.seqs = append(r.seqs, h.Seq)
	r.msgs = append(r.msgs, h)
}

// message returns the Handle of message seq, nil if it is not there or was forgotten.
func (r *recovery) message(seq uint64) *Handle {
	if n := len(r.seqs); n > 0 {
		if i := guessPlace(r.seqs[0], r.seqs[n-1], seq, n); i >= 0 && r.seqs[i] == seq {
			return r.msgs[i]
		}
	}
	i, ok := slices.BinarySearch(r.seqs, seq)
	if !ok {
		return nil
	}
	return r.msgs[i]
}

// readBody reads one body of a format 1 file, which has no index: migration writes it.
func (r *recovery) readBody(k, v []byte) error {
	seq, err := messageSeq(k)
	if err != nil {
		return err
	}
	m, err := decodeBody(v)
	if err != nil {
		return err
	}
	r.addMessage(indexOf(m).handle(seq))
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

// resolve counts the references to each message on its Handle, collects the entries whose message
// is damaged or missing as damage (and drops them from the state, which is then what repair
// keeps), and marks the unreferenced messages for deletion.
func (r *recovery) resolve() {
	ref := func(bucket string, key []byte, seq uint64) bool {
		m := r.message(seq)
		if m == nil {
			// Batches are atomic, so this is damage, not a crash.
			if r.damagedSeqs[seq] {
				d := describe(bucket, key, fmt.Sprintf("refers to message %d, which is damaged", seq))
				d.Seq, d.Dependent = seq, true
				r.damage = append(r.damage, d)
			} else {
				d := describe(bucket, key, fmt.Sprintf("refers to message %d, which is missing", seq))
				d.Seq = seq
				r.damage = append(r.damage, d)
			}
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
			if ref("out", packetIDKey(s.Record.ClientID, e.PacketID), e.MsgSeq) {
				return false
			}
			r.deleteKey("out", packetIDKey(s.Record.ClientID, e.PacketID))
			return true
		})
		s.Queue = slices.DeleteFunc(s.Queue, func(q QueuedRecord) bool {
			if ref("queue", orderKey(s.Record.ClientID, q.Order), q.MsgSeq) {
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
	r.resolveShared(ref)
	kept := 0 // the messages kept move down, in order, over those forgotten or removed
	for i, m := range r.msgs {
		if m == nil {
			continue
		}
		if m.refs.Load() == 0 { // no entry referred to it (counted above)
			r.deleteKey("msgs", seqKey(m.Seq))
			r.deleteKey("msgidx", seqKey(m.Seq))
			r.orphans++
			continue
		}
		r.seqs[kept], r.msgs[kept] = r.seqs[i], m
		kept++
	}
	clear(r.msgs[kept:])
	r.seqs, r.msgs = r.seqs[:kept], r.msgs[:kept]
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
		if err := put(bk.sessions, bucketSessions, []byte(s.Record.ClientID), v); err != nil {
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
		Dedup: r.dedup, Shared: r.shared}
	for _, s := range r.sessions {
		rec.Sessions = append(rec.Sessions, *s)
	}
	r.log.Info("inflight: recovered",
		slog.Int("sessions", len(r.sessions)), slog.Int("subscriptions", r.subs),
		slog.Int("inbound", r.inbound), slog.Int("outbound", r.outbound), slog.Int("queued", r.queued),
		slog.Int("messages", len(r.msgs)), slog.Int("retained", len(r.retained)),
		slog.Int("expired", len(r.expired)), slog.Int("orphans_removed", r.orphans),
		slog.Int("broken_removed", r.dropped), slog.Int("dedup_ids", len(r.dedup)), slog.Int("shared", len(r.shared)))
	return rec, r.lastSeq
}
