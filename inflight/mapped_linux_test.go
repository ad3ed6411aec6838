package inflight

import (
	"bufio"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Start-up reads every page of the file through bbolt's memory map, twice (the guarded page walk,
// then the decoding), and a page read stays resident until it is handed back: without walkRelease
// the process held the whole file on top of its heap (470 MiB of a 500 MiB file of a million
// queued messages). Both walks must leave at most a few release periods of the file resident.
func TestStartUpWalksHandBackMappedPages(t *testing.T) {
	defer func(n int) { walkReleaseEvery = n }(walkReleaseEvery)
	walkReleaseEvery = 256 << 10
	path := testPath(t)
	j, _, err := Open(path, &Options{NoSync: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for s := range 4 {
		client := fmt.Sprintf("client-%d", s)
		var b Batch
		b.PutSession(SessionRecord{ClientID: client, ProtocolVersion: 5, ExpiryInterval: neverExpires, DisconnectedAt: 1})
		for i := range 5000 {
			m := &Message{Seq: j.NextSeq(), Topic: "walk/topic", Payload: []byte("0123456789abcdef"), QoS: 1}
			b.PutMessage(m)
			b.PutQueued(client, QueuedRecord{Order: uint64(i + 1), QoS: 1, MsgSeq: m.Seq})
		}
		mustCommit(t, j, &b)
	}
	if err := j.checkpointForCopy(); err != nil { // the records in bbolt, not only in the log
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := openBolt(path, true, true)
	if err != nil {
		t.Fatal(err)
	}
	defer closeQuietly(db)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	limit := 4 * int64(walkReleaseEvery)
	if st.Size() < 4*limit {
		t.Fatalf("the file is %d bytes: too small to tell", st.Size())
	}
	for _, walk := range []struct {
		name string
		run  func() error
	}{
		{"page walk", func() error { return walkPages(db) }},
		{"decoding", func() error {
			_, err := readFile(db, 0, false, slog.New(slog.DiscardHandler))
			return err
		}},
	} {
		if err := dropMapped(db.Info().Data, int64(st.Size())); err != nil {
			t.Fatal(err)
		}
		if err := walk.run(); err != nil {
			t.Fatalf("%s: %v", walk.name, err)
		}
		if rss := mappedRSS(t, path); rss > limit {
			t.Errorf("after the %s %d KiB of the %d KiB file are resident, want at most %d KiB",
				walk.name, rss>>10, st.Size()>>10, limit>>10)
		}
	}
}

// mappedRSS returns the resident bytes of this process's mappings of the file at path
// (/proc/self/smaps).
func mappedRSS(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	var rss int64
	found, in := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if !strings.HasSuffix(fields[0], ":") { // a mapping's first line: address range ... path
			in = fields[len(fields)-1] == path
			found = found || in
			continue
		}
		if in && fields[0] == "Rss:" {
			kib, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			rss += kib << 10
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Fatalf("no mapping of %s in /proc/self/smaps", path)
	}
	return rss
}
