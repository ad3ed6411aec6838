package inflight

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// commitLog records what Options.OnCommit was told.
type commitLog struct {
	mu      sync.Mutex
	records []int
	took    []time.Duration
}

func (c *commitLog) observe(records int, took time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records = append(c.records, records)
	c.took = append(c.took, took)
}

// OnCommit is told of each commit with the records it wrote; a batch with no change makes no
// commit and is not reported.
func TestOnCommitReportsEachCommit(t *testing.T) {
	var seen commitLog
	j, _, _ := openTest(t, "", &Options{OnCommit: seen.observe})
	b := &Batch{}
	b.PutSession(SessionRecord{ClientID: "a", ProtocolVersion: 5, ExpiryInterval: 60})
	b.PutSubscription("a", SubscriptionRecord{Filter: "x/#", QoS: 2})
	b.PutInbound("a", 7, 0)
	mustCommit(t, j, b)
	mustCommit(t, j, &Batch{}) // nothing to write: no commit
	seen.mu.Lock()
	defer seen.mu.Unlock()
	if len(seen.records) != 1 || seen.records[0] != 3 {
		t.Fatalf("OnCommit saw records %v, want one commit of 3", seen.records)
	}
	if seen.took[0] <= 0 {
		t.Fatalf("OnCommit saw a commit taking %v, want > 0", seen.took[0])
	}
}

// WriteTo's copy is a journal that Open recovers with everything committed before the copy.
func TestWriteToCopiesACommittedJournal(t *testing.T) {
	j, _, _ := openTest(t, "", nil)
	b := &Batch{}
	b.PutSession(SessionRecord{ClientID: "kept", ProtocolVersion: 5, ExpiryInterval: NeverExpireForTest})
	b.PutInbound("kept", 42, 0)
	mustCommit(t, j, b)

	copyPath := filepath.Join(t.TempDir(), "oncemq.db")
	f, err := os.Create(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	n, err := j.WriteTo(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(copyPath); st.Size() != n || n == 0 {
		t.Fatalf("WriteTo reported %d bytes, the file has %d", n, st.Size())
	}
	_, rec, _ := openTest(t, copyPath, nil)
	if len(rec.Sessions) != 1 || rec.Sessions[0].Record.ClientID != "kept" ||
		len(rec.Sessions[0].Inbound) != 1 || rec.Sessions[0].Inbound[0].PacketID != 42 {
		t.Fatalf("the copy recovered %+v, want session kept with inbound id 42", rec.Sessions)
	}
}

// NeverExpireForTest is a Session Expiry Interval that does not run out during a test.
const NeverExpireForTest = 0xFFFFFFFF
