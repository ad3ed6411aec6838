package inflight

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

func TestOpenInUse(t *testing.T) {
	_, _, path := openTest(t, "", nil)
	j, rec, err := Open(path, nil)
	if err == nil {
		j.Close()
		t.Fatal("second Open of a file in use succeeded")
	}
	if rec != nil {
		t.Errorf("failed Open returned state %+v", rec)
	}
	want := fmt.Sprintf("open %s: data file is in use by another process (is another oncemq running?)", path)
	if !strings.Contains(err.Error(), want) || !errors.Is(err, berrors.ErrTimeout) {
		t.Errorf("err = %v, want %q wrapping bbolt's timeout", err, want)
	}
}

func TestOpenGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	for name, content := range map[string][]byte{
		"short":     []byte("not a database"),
		"one page":  random(4096),
		"pages":     random(64 << 10),
		"text":      bytes.Repeat([]byte("hello world\n"), 10000),
		"all zeros": make([]byte, 32<<10),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "oncemq.db")
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			j, rec, err := Open(path, nil)
			if err == nil {
				j.Close()
				t.Fatalf("Open of garbage succeeded with %+v", rec)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("err = %v, does not name the file", err)
			}
			t.Log(err)
		})
	}
}

// TestOpenDamagedPages overwrites the data pages of a real journal: whatever bbolt makes of that
// (an error, a panic, garbage values), Open must fail naming the file, or recover a consistent
// state, never crash.
func TestOpenDamagedPages(t *testing.T) {
	j, _, path := openTest(t, "", nil)
	var b Batch
	b.PutSession(SessionRecord{ClientID: "c", ExpiryInterval: neverExpires, DisconnectedAt: 1})
	for i := range 200 { // enough for branch pages in msgs and queue
		m := newMessage(j, "t", strings.Repeat("x", 100))
		b.PutMessage(m)
		b.PutQueued("c", QueuedRecord{Order: uint64(i + 1), QoS: 2, MsgSeq: m.Seq})
	}
	mustCommit(t, j, &b)
	j.Close()
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	const page = 4096
	type damage struct {
		from, to int // offsets in the page
		pattern  byte
	}
	damages := []damage{
		{0, page, 0x00}, {0, page, 0xFF}, {0, page, 0x5A}, // the whole page
		{16, 64, 0xFF}, {16, 64, 0x00}, // the first element headers, past the page header
		{1024, 1100, 0xFF}, // the middle
	}
	branch := branchPages(t, good, page)
	for p := 2; p*page < len(good); p++ {
		for _, d := range damages {
			if branch[p] && d.from == 1024 {
				// Damaged keys inside a branch page pass the read-only scan (a cursor does not
				// compare branch keys) and are found by bbolt's free-page scan when the file is
				// opened for writing. Open reports them, but bbolt returns while that scan's
				// goroutine still reads the transaction it has closed (go.etcd.io/bbolt db.go
				// freepages), a data race inside bbolt that fails this test under -race.
				continue
			}
			pattern := d.pattern
			damaged := bytes.Clone(good)
			for i := p*page + d.from; i < p*page+d.to && i < len(damaged); i++ {
				damaged[i] = pattern
			}
			dpath := filepath.Join(t.TempDir(), "oncemq.db")
			if err := os.WriteFile(dpath, damaged, 0o600); err != nil {
				t.Fatal(err)
			}
			j, rec, err := Open(dpath, &Options{Logger: testLogger(&logBuffer{})})
			if err != nil {
				t.Logf("page %d %+v: %v", p, d, err)
				if !strings.Contains(err.Error(), dpath) {
					t.Errorf("page %d = %#x: err = %v, does not name the file", p, pattern, err)
				}
				continue
			}
			if err := rec.Check(); err != nil {
				t.Errorf("page %d = %#x: recovered state breaks invariants: %v", p, pattern, err)
			}
			j.Close()
		}
	}
	// The journal opened by openTest was closed before the damage; its cleanup reopens the intact file.
}

func TestOpenBadValue(t *testing.T) {
	j, _, path := openTest(t, "", nil)
	m := newMessage(j, "t/1", "x")
	r := newMessage(j, "r/1", "y")
	var b Batch
	b.PutSession(SessionRecord{ClientID: "c", ExpiryInterval: 60, DisconnectedAt: 1 << 62})
	b.PutSubscription("c", SubscriptionRecord{Filter: "t/#", QoS: 2})
	b.PutInbound("c", 7, 0)
	b.PutMessage(m)
	b.PutOutbound("c", OutboundRecord{PacketID: 8, State: PublishSent, QoS: 2, Order: 1, MsgSeq: m.Seq})
	b.PutQueued("c", QueuedRecord{Order: 2, QoS: 2, MsgSeq: m.Seq})
	b.PutRetained(r)
	mustCommit(t, j, &b)
	j.Close()
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		bucket []byte
		key    []byte
		damage func(v []byte) []byte
		want   string
	}{
		{"session version", bucketSessions, []byte("c"), setByte(0, 7), "format version 7 unknown"},
		{"session json", bucketSessions, []byte("c"), func(v []byte) []byte { return v[:len(v)-1] }, "unexpected end of JSON"},
		{"subscription version", bucketSubs, filterKey("c", "t/#"), setByte(0, 3), "format version 3 unknown"},
		{"inbound version", bucketIn, packetIDKey("c", 7), setByte(0, 0), "format version 0 unknown"},
		{"inbound length", bucketIn, packetIDKey("c", 7), func(v []byte) []byte { return append(v, 0) }, "3 bytes"},
		{"outbound version", bucketOut, packetIDKey("c", 8), setByte(0, 9), "format version 9 unknown"},
		{"outbound state", bucketOut, packetIDKey("c", 8), setByte(1, 3), "outbound state 3"},
		{"outbound truncated", bucketOut, packetIDKey("c", 8), func(v []byte) []byte { return v[:5] }, "5 bytes"},
		{"outbound trailing", bucketOut, packetIDKey("c", 8), func(v []byte) []byte { return append(v, 1) }, "trailing"},
		{"queue version", bucketQueue, orderKey("c", 2), setByte(0, 9), "format version 9 unknown"},
		{"queue retain flag", bucketQueue, orderKey("c", 2), setByte(2, 2), "flag byte 2"},
		{"message version", bucketMsgs, seqKey(m.Seq), setByte(0, 9), "format version 9 unknown"},
		{"message packet type", bucketMsgs, seqKey(m.Seq), setByte(17, 0x20), "want PUBLISH"},
		{"message truncated", bucketMsgs, seqKey(m.Seq), func(v []byte) []byte { return v[:len(v)-1] }, "message length"},
		{"index version", bucketMsgIdx, seqKey(m.Seq), setByte(0, 9), "format version 9 unknown"},
		{"index length", bucketMsgIdx, seqKey(m.Seq), func(v []byte) []byte { return v[:5] }, "5 bytes"},
		{"retained version", bucketRetained, []byte("r/1"), setByte(0, 9), "format version 9 unknown"},
		{"format version", bucketMeta, keyFormat, setByte(0, 3), "bucket meta"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "oncemq.db")
			if err := os.WriteFile(path, good, 0o600); err != nil {
				t.Fatal(err)
			}
			rawUpdate(t, path, func(tx *bolt.Tx) error {
				bk := tx.Bucket(tt.bucket)
				v := bk.Get(tt.key)
				if v == nil {
					return fmt.Errorf("no key %q in %s", tt.key, tt.bucket)
				}
				// The damage is sealed with a valid checksum, so that what is tested is the
				// decoder behind it (TestOpenChecksumMismatch tests the checksum).
				body, err := unseal(tt.bucket, tt.key, v)
				if err != nil {
					return err
				}
				return bk.Put(tt.key, seal(tt.bucket, tt.key, tt.damage(bytes.Clone(body))))
			})
			damaged, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			j, rec, err := Open(path, nil)
			if err == nil && bytes.Equal(tt.bucket, bucketMsgs) {
				// Start-up reads no body: a damaged one is found when it is about to be sent.
				_, err = j.LoadMessage(m.Seq)
				j.Close()
				if err == nil {
					t.Fatal("LoadMessage of a damaged body succeeded")
				}
				damaged, _ = os.ReadFile(path)
			} else if err == nil {
				j.Close()
				t.Fatalf("Open succeeded with %+v", rec)
			}
			msg := err.Error()
			for _, want := range []string{path, "bucket " + string(tt.bucket), tt.want} {
				if !strings.Contains(msg, want) {
					t.Errorf("err = %v\nwant it to contain %q", err, want)
				}
			}
			if string(tt.bucket) != "meta" {
				if !strings.Contains(msg, fmt.Sprintf("%q", tt.key)) {
					t.Errorf("err = %v\ndoes not name key %q", err, tt.key)
				}
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("err = %v, want ErrCorrupt", err)
			}
			// Nothing was changed: the damage is still there for a person to look at.
			if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, damaged) {
				t.Errorf("a failed Open changed the file (%v)", err)
			}
		})
	}
}

func setByte(i int, b byte) func([]byte) []byte {
	return func(v []byte) []byte {
		v[i] = b
		return v
	}
}

// A bbolt file without oncemq's meta/format is refused, with buckets of its own or none: Open
// writes meta/format before a file gets its name, so no crash leaves one.
func TestOpenForeignBolt(t *testing.T) {
	for _, buckets := range [][]string{{"widgets"}, nil} {
		path := filepath.Join(t.TempDir(), "other.db")
		rawUpdate(t, path, func(tx *bolt.Tx) error {
			for _, name := range buckets {
				if _, err := tx.CreateBucket([]byte(name)); err != nil {
					return err
				}
			}
			return nil
		})
		_, _, err := Open(path, nil)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "without oncemq's meta/format") {
			t.Errorf("buckets %q: err = %v", buckets, err)
		}
	}
}

func TestOpenCreatesDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "c", "oncemq.db")
	openTest(t, path, nil)
	if _, err := os.Stat(path); err != nil {
		t.Error(err)
	}
}

// branchPages lists the pages of a bbolt file whose header says branch (flags 0x01 at offset 8, in
// bbolt's little-endian page header). Free pages keep their old header; listing one does no harm.
func branchPages(t *testing.T, file []byte, pageSize int) map[int]bool {
	t.Helper()
	branch := make(map[int]bool)
	for p := 2; (p+1)*pageSize <= len(file); p++ {
		if binary.LittleEndian.Uint16(file[p*pageSize+8:]) == 0x01 {
			branch[p] = true
		}
	}
	if len(branch) == 0 {
		t.Fatal("the test file has no branch page: make it larger")
	}
	return branch
}
