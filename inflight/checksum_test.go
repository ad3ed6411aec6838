package inflight

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// queuedStore writes a journal with one offline session "sub" and n queued QoS 2 messages, each
// with a payload of its own ("payload 0042 ..."), closes it, and returns its path and bytes.
func queuedStore(t *testing.T, n int) (string, []byte) {
	t.Helper()
	path := testPath(t)
	j, _, err := Open(path, &Options{Logger: testLogger(&logBuffer{})})
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	b.PutSession(SessionRecord{ClientID: "sub", ProtocolVersion: 5, ExpiryInterval: neverExpires, DisconnectedAt: 1})
	b.PutSubscription("sub", SubscriptionRecord{Filter: "t/#", QoS: 2})
	b.PutInbound("sub", 9, 0)
	for i := range n {
		m := newMessage(j, "t/q", payloadOf(i))
		b.PutMessage(m)
		if i == 0 {
			b.PutOutbound("sub", OutboundRecord{PacketID: 1, State: PublishSent, QoS: 2, Order: 1, MsgSeq: m.Seq})
			continue
		}
		b.PutQueued("sub", QueuedRecord{Order: uint64(i + 1), QoS: 2, MsgSeq: m.Seq})
	}
	mustCommit(t, j, &b)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, good
}

func payloadOf(i int) string {
	return fmt.Sprintf("payload %04d %s", i, strings.Repeat("x", 100))
}

// intactPayloads checks that every message rec delivers to "sub" has the payload it was written
// with, its body read through j as a broker reads it to send it, and returns the orders (1 for the
// outbound entry) it delivers. A body that cannot be read is an error here.
func intactPayloads(t *testing.T, j *Journal, rec *Recovered) []uint64 {
	t.Helper()
	orders, unreadable := deliverable(t, j, rec)
	if len(unreadable) > 0 {
		t.Errorf("orders %v: bodies unreadable", unreadable)
	}
	return orders
}

// deliverable reads the body of every message rec delivers to "sub" through j: it returns the
// orders whose body has the payload it was written with, and those whose body is refused as
// damage (ErrCorrupt naming bucket msgs and the message). A body read back with another payload is
// an error: that is what a broker would deliver.
func deliverable(t *testing.T, j *Journal, rec *Recovered) (intact, unreadable []uint64) {
	t.Helper()
	s := session(rec, "sub")
	if s == nil {
		t.Fatal("session sub not recovered")
	}
	check := func(order, seq uint64) {
		if rec.Messages.Get(seq) == nil {
			t.Errorf("order %d: message %d not recovered", order, seq)
			return
		}
		m, err := j.LoadMessage(seq)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "bucket msgs key") ||
				!strings.Contains(err.Error(), fmt.Sprintf("bucket msgs key %q (message %d)", seqKey(seq), seq)) {
				t.Errorf("order %d: LoadMessage(%d) = %v, want ErrCorrupt naming bucket msgs and the seq", order, seq, err)
			}
			unreadable = append(unreadable, order)
			return
		}
		if want := payloadOf(int(order - 1)); string(m.Payload) != want {
			t.Errorf("order %d: message %d delivered as %+v, want payload %q", order, seq, m, want)
		}
		intact = append(intact, order)
	}
	for _, e := range s.Outbound {
		check(e.Order, e.MsgSeq)
	}
	for _, q := range s.Queue {
		check(q.Order, q.MsgSeq)
	}
	return intact, unreadable
}

// copyTo writes content to a new oncemq.db and returns its path.
func copyTo(t *testing.T, content []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "oncemq.db")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOpenBitFlipsInDataPages flips 20 random bits in the data pages of a file holding 300 queued
// QoS 2 messages, which a broker without checksums started on and delivered 11 to 13 corrupted
// payloads from (storage v2 issue). Open now either fails naming the file, or recovers every
// message, each body read back either as it was written or refused as damage (start-up reads no
// body: a damaged one is found when it is read to be sent); a file refused with a DamageError, or
// with a damaged body, is repaired, and the repaired file recovers every message but those Repair
// gave up, every body intact.
func TestOpenBitFlipsInDataPages(t *testing.T) {
	_, good := queuedStore(t, 300)
	const page = 4096
	branch := branchPages(t, good, page)
	var refused, damaged, bodies, clean int
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 11))
		file := bytes.Clone(good)
		for range 20 {
			p := 2 + rng.IntN(len(file)/page-2)
			if branch[p] {
				continue // see TestOpenDamagedPages: bbolt races on a damaged branch page under -race
			}
			off := p*page + 16 + rng.IntN(page-16) // past the page header
			file[off] ^= 1 << rng.IntN(8)
		}
		path := copyTo(t, file)
		j, rec, err := Open(path, &Options{Logger: testLogger(&logBuffer{})})
		if err == nil {
			got, bad := deliverable(t, j, rec)
			if len(got)+len(bad) != 300 {
				t.Errorf("seed %d: Open started with %d of 300 messages and no error", seed, len(got)+len(bad))
			}
			j.Close()
			if len(bad) == 0 {
				clean++
				continue
			}
			bodies++ // damaged bodies only: found when read, and by Inspect and Repair
			in, err := Inspect(path, time.Now().UnixNano())
			if err != nil {
				t.Fatalf("seed %d: Inspect: %v", seed, err)
			}
			if n := countBucket(in.Damage, "msgs"); n < len(bad) {
				t.Errorf("seed %d: %d bodies unreadable, Inspect lists %d damaged bodies: %v", seed, len(bad), n, in.Damage)
			}
		} else {
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
				t.Errorf("seed %d: err = %v, want ErrCorrupt naming %s", seed, err, path)
			}
			var de *DamageError
			if !errors.As(err, &de) {
				refused++ // bbolt itself could not read a page: nothing to repair record by record
				continue
			}
			damaged++
		}
		rep, err := Repair(path, time.Unix(1_800_000_000, 0))
		if err != nil {
			t.Errorf("seed %d: Repair: %v", seed, err)
			continue
		}
		// Each delivery given up is one queue or out record in the list: damaged (its key may
		// be damaged too, so the order it names is not trusted), or depending on a damaged or
		// missing message.
		lost, lostOut, queueGone := 0, 0, false
		for _, d := range rep.GivenUp {
			if (d.Bucket == "queue" || d.Bucket == "out") && d.Key != nil { // a bucket-level line is no delivery
				lost++
				if d.Bucket == "out" {
					lostOut++
				}
			}
			// The queue bucket's name and its root both damaged: no record names it any more,
			// and repair says the whole queue is lost.
			queueGone = queueGone || d.Bucket == "queue" && d.Key == nil && strings.HasPrefix(d.Problem, "missing")
		}
		want := 300 - lost
		if queueGone {
			want = 1 - lostOut
		}
		j, rec, err = Open(path, &Options{Logger: testLogger(&logBuffer{})})
		if err != nil {
			t.Errorf("seed %d: Open after Repair: %v", seed, err)
			continue
		}
		if err := rec.Check(); err != nil {
			t.Errorf("seed %d: repaired state breaks invariants: %v", seed, err)
		}
		if session(rec, "sub") == nil {
			// The session record itself was damaged: Repair gave up the session with it.
			if !slices.ContainsFunc(rep.GivenUp, func(d Damage) bool { return d.Bucket == "sessions" }) {
				t.Errorf("seed %d: session sub lost, but Repair did not say so: %v", seed, rep.GivenUp)
			}
		} else if got := intactPayloads(t, j, rec); len(got) != want {
			t.Errorf("seed %d: after Repair, %d messages delivered, want the %d not given up:\n%v", seed, len(got), want, rep.GivenUp)
		}
		j.Close()
	}
	t.Logf("40 files with 20 flipped bits: %d refused by bbolt, %d refused with a list of damaged records, %d with damaged bodies only, %d intact (flips in free space)", refused, damaged, bodies, clean)
	if damaged == 0 || bodies == 0 {
		t.Error("no flip was found by a checksum at start-up, or none in a body only: the test damaged nothing the checksums guard")
	}
}

// countBucket counts the damaged records of bucket in ds, those that depend on damage left out.
func countBucket(ds []Damage, bucket string) int {
	n := 0
	for _, d := range ds {
		if d.Bucket == bucket && !d.Dependent {
			n++
		}
	}
	return n
}

// storedAt returns the offsets in file of the value stored under key in bucket (bbolt writes a leaf
// element's key and value next to each other), and its length. There can be several: a page that
// a later commit copied stays in the file as a free page.
func storedAt(t *testing.T, path string, file []byte, bucket, key []byte) ([]int, int) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var kv []byte
	var n int
	err = db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucket).Get(key)
		if v == nil {
			return fmt.Errorf("no key %q in %s", key, bucket)
		}
		kv, n = append(bytes.Clone(key), v...), len(v)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var at []int
	for i := 0; ; {
		j := bytes.Index(file[i:], kv)
		if j < 0 {
			break
		}
		at = append(at, i+j+len(key))
		i += j + 1
	}
	if len(at) == 0 {
		t.Fatalf("%s %q: not found in the file", bucket, key)
	}
	return at, n
}

// One flipped byte in a record (an index record of msgidx, in, out or queue, a session, a retained
// message, meta/format) stops Open with a DamageError that names the bucket, the key and what it
// belonged to, and changes nothing in the file. A flipped byte in a payload does not stop Open,
// which reads no body: the body is refused when it is read (LoadMessage), naming bucket msgs, the
// key and the seq, and Inspect lists it with the entry that depends on it. [guard: unseal's
// comparison]
func TestOpenFlippedByteInRecord(t *testing.T) {
	src, good := queuedStore(t, 20)
	j, _, err := Open(src, &Options{Logger: testLogger(&logBuffer{})})
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	b.PutRetained(&Message{Topic: "r/1", Payload: []byte("retained"), QoS: 1, Retain: true})
	mustCommit(t, j, &b)
	j.Close()
	if good, err = os.ReadFile(src); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		bucket []byte
		key    []byte
		at     func(n int) int // the byte of the value to flip
		want   []string
	}{
		{"payload", bucketMsgs, seqKey(5), func(n int) int { return n - 20 }, []string{
			`bucket msgs key "\x00\x00\x00\x00\x00\x00\x00\x05" (message 5): checksum mismatch`,
			`depends on damage: bucket queue key "sub\x00\x00\x00\x00\x00\x00\x00\x00\x05" (client "sub", queue order 5, message 5): refers to message 5, which is damaged`,
			"1 damaged records and 1 records that depend on them"}},
		{"index", bucketMsgIdx, seqKey(5), func(n int) int { return 3 }, []string{
			`bucket msgidx key "\x00\x00\x00\x00\x00\x00\x00\x05" (message 5): checksum mismatch`,
			`depends on damage: bucket msgs key "\x00\x00\x00\x00\x00\x00\x00\x05" (message 5): its index record is damaged`,
			`depends on damage: bucket queue key "sub\x00\x00\x00\x00\x00\x00\x00\x00\x05" (client "sub", queue order 5, message 5): refers to message 5, which is damaged`,
			"1 damaged records and 2 records that depend on them"}},
		{"outbound", bucketOut, packetIDKey("sub", 1), func(n int) int { return 12 }, []string{
			`bucket out key "sub\x00\x00\x01" (client "sub", packet id 1): checksum mismatch`, "1 damaged records "}},
		{"queue", bucketQueue, orderKey("sub", 7), func(n int) int { return 4 }, []string{
			`bucket queue key "sub\x00\x00\x00\x00\x00\x00\x00\x00\a" (client "sub", queue order 7): checksum mismatch`}},
		{"inbound", bucketIn, packetIDKey("sub", 9), func(n int) int { return 1 }, []string{
			`bucket in key "sub\x00\x00\t" (client "sub", packet id 9): checksum mismatch`}},
		{"checksum itself", bucketIn, packetIDKey("sub", 9), func(n int) int { return n - 1 }, []string{
			`bucket in key "sub\x00\x00\t" (client "sub", packet id 9): checksum mismatch`}},
		{"session", bucketSessions, []byte("sub"), func(n int) int { return 5 }, []string{
			`bucket sessions key "sub" (client "sub"): checksum mismatch`,
			`depends on damage: bucket subs key "sub\x00t/#" (client "sub"): the session record of client "sub" is damaged`,
			"1 damaged records and 22 records that depend on them"}},
		{"retained", bucketRetained, []byte("r/1"), func(n int) int { return n - 6 }, []string{
			`bucket retained key "r/1" (topic "r/1"): checksum mismatch`}},
		{"format", bucketMeta, keyFormat, func(n int) int { return 2 }, []string{
			"bucket meta key format", "checksum mismatch"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at, n := storedAt(t, src, good, tt.bucket, tt.key)
			file := bytes.Clone(good)
			for _, i := range at {
				file[i+tt.at(n)] ^= 0x10
			}
			path := copyTo(t, file)
			if bytes.Equal(tt.bucket, bucketMsgs) {
				damagedBody(t, path, file, tt.want)
				return
			}
			_, _, err := Open(path, &Options{Logger: testLogger(&logBuffer{})})
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open = %v, want ErrCorrupt", err)
			}
			for _, want := range append(tt.want, path) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
			if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, file) {
				t.Errorf("the refused file changed (%v)", err)
			}
		})
	}
}

// damagedBody checks a file whose only damage is the body of message 5: Inspect lists it (want,
// but for the count line) and changes nothing, Open starts, and LoadMessage refuses that body
// alone, naming the bucket, the key and the seq.
func damagedBody(t *testing.T, path string, file []byte, want []string) {
	t.Helper()
	in, err := Inspect(path, time.Now().UnixNano())
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	var lines []string
	for _, d := range in.Damage {
		lines = append(lines, d.String())
	}
	listed := strings.Join(lines, "\n")
	for _, w := range want[:len(want)-1] {
		if w = strings.TrimPrefix(w, "depends on damage: "); !strings.Contains(listed, w) {
			t.Errorf("Inspect does not list %q:\n%s", w, listed)
		}
	}
	if len(lines) != 2 {
		t.Errorf("Inspect lists %d records, want 2:\n%s", len(lines), listed)
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, file) {
		t.Errorf("Inspect changed the file (%v)", err)
	}
	j, rec, err := Open(path, &Options{Logger: testLogger(&logBuffer{})})
	if err != nil {
		t.Fatalf("Open = %v, want a start (no body is read at start-up)", err)
	}
	defer j.Close()
	_, err = j.LoadMessage(5)
	for _, w := range []string{`bucket msgs key "\x00\x00\x00\x00\x00\x00\x00\x05" (message 5)`, "checksum mismatch"} {
		if err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), w) {
			t.Errorf("LoadMessage(5) = %v, want ErrCorrupt with %q", err, w)
		}
	}
	got, bad := deliverable(t, j, rec)
	if len(got) != 19 || !slices.Equal(bad, []uint64{5}) {
		t.Errorf("bodies intact for orders %v, unreadable %v; want all but 5, and 5", got, bad)
	}
}

// Repair of a file with a damaged payload gives up that message and the queue entry that held it,
// keeps the original byte for byte, and the repaired file recovers every other message as written.
// A clean file passes with nothing given up and is not touched.
func TestRepair(t *testing.T) {
	src, good := queuedStore(t, 50)
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	t.Run("clean", func(t *testing.T) {
		path := copyTo(t, good)
		rep, err := Repair(path, now)
		if err != nil || len(rep.GivenUp) != 0 || rep.Kept != "" {
			t.Fatalf("Repair of a clean file = %+v, %v; want nothing given up", rep, err)
		}
		if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, good) {
			t.Errorf("Repair changed a clean file (%v)", err)
		}
		if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
			t.Errorf("Repair left files behind: %v", entries)
		}
	})
	t.Run("payload", func(t *testing.T) {
		at, n := storedAt(t, src, good, bucketMsgs, seqKey(30))
		file := bytes.Clone(good)
		for _, i := range at {
			file[i+n-10] ^= 0x01
		}
		path := copyTo(t, file)
		rep, err := Repair(path, now)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, d := range rep.GivenUp {
			lines = append(lines, d.String())
		}
		want := []string{
			`bucket msgs key "\x00\x00\x00\x00\x00\x00\x00\x1e" (message 30): checksum mismatch`,
			`bucket queue key "sub\x00\x00\x00\x00\x00\x00\x00\x00\x1e" (client "sub", queue order 30, message 30): refers to message 30, which is damaged`,
		}
		if len(lines) != 2 || !strings.HasPrefix(lines[0], want[0]) || lines[1] != want[1] {
			t.Errorf("given up:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
		}
		if rep.Kept != path+".damaged-20261201T100000Z" {
			t.Errorf("kept as %q", rep.Kept)
		}
		if kept, err := os.ReadFile(rep.Kept); err != nil || !bytes.Equal(kept, file) {
			t.Errorf("the original is not kept as it was (%v)", err)
		}
		if rep.Written["msgs"] != 49 || rep.Written["queue"] != 48 || rep.Written["out"] != 1 || rep.Written["sessions"] != 1 {
			t.Errorf("written %v", rep.Written)
		}
		j, rec, err := Open(path, &Options{Logger: testLogger(&logBuffer{})})
		if err != nil {
			t.Fatalf("Open after Repair: %v", err)
		}
		defer j.Close()
		if err := rec.Check(); err != nil {
			t.Error(err)
		}
		got := intactPayloads(t, j, rec)
		if len(got) != 49 || slices.Contains(got, 30) {
			t.Errorf("recovered orders %v, want 1..50 but 30", got)
		}
	})
	t.Run("unreadable", func(t *testing.T) {
		path := copyTo(t, good[:8192])
		if _, err := Repair(path, now); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
			t.Errorf("Repair of a truncated file = %v, want ErrCorrupt naming it", err)
		}
		if after, err := os.ReadFile(path); err != nil || len(after) != 8192 {
			t.Errorf("Repair changed a file it could not repair (%v)", err)
		}
	})
}

// BenchmarkSeal measures the checksum of a message value, sealed and checked, next to encoding
// the message, the work every PutMessage does already: the ratio is the cost checksums add to
// the CPU side of a commit.
func BenchmarkSeal(b *testing.B) {
	for _, size := range []int{16, 512, 64 << 10} {
		m := &Message{Seq: 1, Topic: "bench/topic", Payload: bytes.Repeat([]byte{'x'}, size), QoS: 2}
		key := seqKey(1)
		b.Run(fmt.Sprintf("encode/payload=%d", size), func(b *testing.B) {
			for b.Loop() {
				if _, err := encodeMessage(m); err != nil {
					b.Fatal(err)
				}
			}
		})
		v, err := encodeMessage(m)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("seal+unseal/payload=%d", size), func(b *testing.B) {
			buf := make([]byte, len(v), len(v)+checksumSize)
			for b.Loop() {
				copy(buf, v)
				if _, err := unseal(bucketMsgs, key, seal(bucketMsgs, key, buf[:len(v)])); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A file cut short at any page boundary past its meta pages either fails Open naming the file, or,
// when the cut removed only pages bbolt keeps free, recovers every message intact: never a state
// with messages silently missing.
func TestOpenTruncated(t *testing.T) {
	_, good := queuedStore(t, 300)
	const page = 4096
	var refused, whole int
	for cut := 2 * page; cut < len(good); cut += page {
		path := copyTo(t, good[:cut])
		j, rec, err := Open(path, &Options{Logger: testLogger(&logBuffer{})})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
				t.Errorf("cut at %d: err = %v, want ErrCorrupt naming the file", cut, err)
			}
			if refused == 0 {
				t.Logf("cut at %d: %v", cut, err)
			}
			refused++
			continue
		}
		if got := intactPayloads(t, j, rec); len(got) != 300 {
			t.Errorf("cut at %d of %d: Open started with %d of 300 messages", cut, len(good), len(got))
		}
		j.Close()
		whole++
	}
	t.Logf("%d cuts refused, %d removed only free space", refused, whole)
	if refused == 0 {
		t.Error("no cut was refused")
	}
}

// TestOpenDamagedBucketName: bbolt keeps bucket names in the root page without a checksum, so a
// bit flipped in "queue" hides the whole queue bucket. Open must refuse the file (before, the queue
// was skipped and its messages removed as orphans: a broker started without them), and repair must
// find the bucket by its records' checksums, which name it, and write it back whole.
func TestOpenDamagedBucketName(t *testing.T) {
	_, good := queuedStore(t, 50)
	// Every page holding the bucket names: the current root and stale copies in free pages.
	const page = 4096
	file := bytes.Clone(good)
	flipped := 0
	for p := 0; p < len(file)/page; p++ {
		pg := file[p*page : (p+1)*page]
		if i := bytes.Index(pg, []byte("queue")); i >= 0 && bytes.Contains(pg, []byte("sessions")) && bytes.Contains(pg, []byte("retained")) {
			pg[i+4] ^= 0x20 // "queue" -> "queuE"
			flipped++
		}
	}
	if flipped == 0 {
		t.Fatal("no root page holding the bucket names")
	}
	path := copyTo(t, file)
	_, _, err := Open(path, &Options{Logger: testLogger(&logBuffer{})})
	var de *DamageError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), `bucket "queue": found under the damaged name "queuE"`) {
		t.Fatalf("Open = %v, want the queue bucket reported as found under a damaged name", err)
	}
	rep, err := Repair(path, time.Unix(1_800_000_000, 0))
	if err != nil {
		t.Fatalf("Repair: %v", err)
	}
	if rep.Written["queue"] != 49 {
		t.Errorf("repair wrote %d queue records, want 49: %v", rep.Written["queue"], rep.GivenUp)
	}
	j, rec, err := Open(path, &Options{Logger: testLogger(&logBuffer{})})
	if err != nil {
		t.Fatalf("Open after Repair: %v", err)
	}
	defer j.Close()
	if got := intactPayloads(t, j, rec); len(got) != 50 {
		t.Errorf("after repair %d of 50 messages delivered", len(got))
	}
}

// Repair of a damaged file whose log holds acknowledged changes not yet checkpointed: the log's
// records go into the repaired copy, a logged entry that refers to a message the repair gave up is
// given up too (a second pass) and listed, the log is emptied once the copy is in place, and the
// original file and log are kept. Without the log in the repair, the logged queue entry would be
// lost without a word, or replayed later onto a file that has lost what it refers to.
func TestRepairTakesTheLog(t *testing.T) {
	_, good := queuedStore(t, 20)
	path := copyTo(t, good)
	j, _, _ := openTest(t, path, &Options{wal: walOptions{maxRecords: 1 << 30, maxAge: 1 << 62}})
	var moved, added Batch // message 5 sent to the subscriber; a new message queued
	moved.DeleteQueued("sub", 5)
	moved.PutOutbound("sub", OutboundRecord{PacketID: 2, State: PublishSent, QoS: 2, Order: 5, MsgSeq: 5})
	mustCommit(t, j, &moved)
	m := newMessage(j, "t/q", payloadOf(20))
	added.PutMessage(m)
	added.PutQueued("sub", QueuedRecord{Order: 21, QoS: 2, MsgSeq: m.Seq})
	mustCommit(t, j, &added)
	// The process dies here: the file is as queuedStore left it, the log holds both batches.
	crashed := map[string][]byte{}
	segs := segmentPaths(path)
	for _, p := range append(segs[:], path) {
		data, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		crashed[p] = data
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	at, n := storedAt(t, path, crashed[path], bucketMsgs, seqKey(5))
	for _, i := range at {
		crashed[path][i+n-10] ^= 0x01
	}
	for p, data := range crashed {
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Start-up reads no body, so Open would start on it; the offline Inspect finds the damage.
	if in, err := Inspect(path, time.Now().UnixNano()); err != nil || countBucket(in.Damage, "msgs") != 1 {
		t.Fatalf("Inspect of the damaged file = %v, %+v; want one damaged body", err, in)
	}
	rep, err := Repair(path, time.Unix(1_800_000_000, 0))
	if err != nil {
		t.Fatalf("Repair: %v", err)
	}
	var lines []string
	for _, d := range rep.GivenUp {
		lines = append(lines, d.String())
	}
	for _, want := range []string{`bucket msgs key "\x00\x00\x00\x00\x00\x00\x00\x05" (message 5): checksum mismatch`,
		`bucket out key "sub\x00\x00\x02" (client "sub", packet id 2, message 5): refers to message 5, which is missing`} {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("Repair did not give up %q; it gave up:\n%s", want, strings.Join(lines, "\n"))
		}
	}
	for _, p := range segmentPaths(path) {
		if data, err := os.ReadFile(p); err == nil && !allZero(data) {
			t.Errorf("log segment %s not emptied by the repair", p)
		}
	}
	if _, err := os.Stat(logPath(path) + strings.TrimPrefix(rep.Kept, path)); err != nil {
		t.Errorf("the original log is not kept beside the original file: %v", err)
	}
	j2, rec, _ := openTest(t, path, nil)
	defer j2.Close()
	s := session(rec, "sub")
	if s == nil || len(s.Outbound) != 1 || len(s.Queue) != 19 || s.Queue[len(s.Queue)-1].Order != 21 {
		t.Fatalf("after repair: %+v, want packet id 1 in flight and 19 queued ending with the logged order 21", s)
	}
	if got := intactPayloads(t, j2, rec); len(got) != 20 {
		t.Errorf("after repair %d messages intact, want 20", len(got))
	}
}

// A file with damage and log records it does not have yet (a kill between checkpoints): start-up
// walks the pages only before opening for writing, replays the log and reads the state in one
// write transaction, finds the damage there and rolls back, so the refused file and its log stay
// byte for byte as they were (what repair needs).
func TestDamageFoundAfterReplayLeavesFileAndLog(t *testing.T) {
	_, good := queuedStore(t, 20)
	path := copyTo(t, good)
	j, _, err := Open(path, &Options{Logger: testLogger(&logBuffer{}), wal: walOptions{maxRecords: 1 << 30, maxAge: 1 << 62}})
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	b.PutInbound("sub", 11, 0)
	mustCommit(t, j, &b)
	segs := segmentPaths(path)
	crashed := map[string][]byte{}
	for _, p := range append(segs[:], path) {
		data, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		crashed[p] = data
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	at, _ := storedAt(t, path, crashed[path], bucketQueue, orderKey("sub", 7))
	for _, i := range at {
		crashed[path][i+4] ^= 0x10
	}
	for p, data := range crashed {
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err = Open(path, &Options{Logger: testLogger(&logBuffer{})})
	var de *DamageError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), `bucket queue key "sub\x00\x00\x00\x00\x00\x00\x00\x00\a"`) {
		t.Fatalf("Open = %v, want the damaged queue record listed", err)
	}
	for p, data := range crashed {
		if after, err := os.ReadFile(p); err != nil || !bytes.Equal(after, data) {
			t.Errorf("%s changed by the refused start (%v)", p, err)
		}
	}
}
