package session

import (
	"fmt"
	"hash/maphash"
	"testing"
	"time"

	"github.com/oncemq/oncemq/inflight"
)

// dedupHarness is a harness with dedup on (window 5m, at most max ids), a clock, a durable
// subscriber "sub" on "t" at QoS 1, and a publisher "pub".
func dedupHarness(t *testing.T, max int, opts DedupOptions) (*harness, *clock, *Session, *recConn) {
	t.Helper()
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	opts.Property, opts.Window, opts.Max = "dedup-id", 5*time.Minute, max
	h := newHarness(t, Options{Dedup: opts, Now: clk.Now})
	sub, subC := h.connect("sub", 3600, 0)
	h.subscribe(sub, subC, "t", 1)
	pub, pubC := h.connect("pub", 0, 0)
	return h, clk, pub, pubC
}

// deliveries counts the PUBLISHes "sub" was sent since the last take.
func deliveries(h *harness) int {
	h.j.commit()
	n := 0
	for _, e := range h.rec.take() {
		var id int
		if _, err := fmt.Sscanf(e, "sub <- PUBLISH id=%d", &id); err == nil {
			n++
		}
	}
	h.j.step()
	return n
}

func TestDedupResendAfterCleanStartDeliveredOnce(t *testing.T) {
	h, _, pub, pubC := dedupHarness(t, 100, DedupOptions{})
	h.publishDedup(pub, pubC, "t", "m", 1, 1, "r1")
	if n := deliveries(h); n != 1 {
		t.Fatalf("first copy: %d deliveries, want 1", n)
	}
	// The device reboots: a new connection with Clean Start, the same message under a new id.
	pub, pubC = h.connect("pub", 0, 0)
	h.publishDedup(pub, pubC, "t", "m", 1, 9, "r1")
	h.j.commit()
	h.expectEvents("the resend", "submit #1", "commit #1", "pub <- PUBACK id=9 Success dedup=duplicate")
	if got := h.b.Stats(); got.DuplicatesByDedupID != 1 || got.DedupIDs != 1 {
		t.Errorf("stats: %d duplicates by dedup id, %d ids in the window; want 1 and 1", got.DuplicatesByDedupID, got.DedupIDs)
	}
}

func TestDedupAfterTheWindowDeliveredAgain(t *testing.T) {
	h, clk, pub, pubC := dedupHarness(t, 100, DedupOptions{})
	h.publishDedup(pub, pubC, "t", "m", 1, 1, "r1")
	deliveries(h)
	clk.advance(5*time.Minute + time.Second)
	h.publishDedup(pub, pubC, "t", "m", 1, 2, "r1")
	recs := h.j.records()
	if n := deliveries(h); n != 1 {
		t.Fatalf("an id re-used after the window is a new message: %d deliveries, want 1", n)
	}
	// The aged-out record is not deleted: the new one took its key.
	if len(recs) != 1 || !contains(recs[0], "put dedup c/pub/r1 reason=0x00") || contains(recs[0], "delete dedup c/pub/r1") {
		t.Errorf("the re-used id's batch: %q", recs)
	}
}

// TestDedupCountLimitEvictsOldestFirst: with room for 2 ids, a third pushes out the first, whose
// copy is then a new message, while the second's copy is still a duplicate. The evicted id is
// deleted from the file in a later batch.
func TestDedupCountLimitEvictsOldestFirst(t *testing.T) {
	h, _, pub, pubC := dedupHarness(t, 2, DedupOptions{})
	for i, id := range []string{"a", "b", "c"} {
		h.publishDedup(pub, pubC, "t", "m"+id, 1, uint16(i+1), id)
	}
	if n := deliveries(h); n != 3 {
		t.Fatalf("%d deliveries, want 3", n)
	}
	h.publishDedup(pub, pubC, "t", "mb", 1, 4, "b")
	if n := deliveries(h); n != 0 {
		t.Errorf("b, still in the window: %d deliveries, want 0", n)
	}
	h.publishDedup(pub, pubC, "t", "ma", 1, 5, "a")
	recs := h.j.records()
	if n := deliveries(h); n != 1 {
		t.Errorf("a, the oldest, evicted by c: %d deliveries, want 1", n)
	}
	// Putting a back evicted b; a's own earlier deletion is skipped since a is back.
	if len(recs) != 1 || !contains(recs[0], "put dedup c/pub/a reason=0x00") || contains(recs[0], "delete dedup c/pub/a") {
		t.Errorf("batch of a's second copy: %q", recs)
	}
}

func TestDedupTopicScopeAcrossClients(t *testing.T) {
	h, _, pub, pubC := dedupHarness(t, 100, DedupOptions{TopicScope: true})
	gw, gwC := h.connect("gateway-2", 0, 0)
	h.publishDedup(pub, pubC, "t", "m", 1, 1, "r1")
	h.publishDedup(gw, gwC, "t", "m", 1, 1, "r1")
	if n := deliveries(h); n != 1 {
		t.Fatalf("two gateways, one reading: %d deliveries, want 1", n)
	}
}

func TestDedupClientScopeKeepsClientsApart(t *testing.T) {
	h, _, pub, pubC := dedupHarness(t, 100, DedupOptions{})
	other, otherC := h.connect("other", 0, 0)
	h.publishDedup(pub, pubC, "t", "m", 1, 1, "r1")
	h.publishDedup(other, otherC, "t", "m", 1, 1, "r1")
	if n := deliveries(h); n != 2 {
		t.Fatalf("the same id from two clients: %d deliveries, want 2", n)
	}
}

func TestDedupJSONFieldFor311(t *testing.T) {
	h, _, _, _ := dedupHarness(t, 100, DedupOptions{JSONField: "msg_id"})
	old, oldC := h.connectAs(ConnectRequest{ClientID: "old", ProtocolVersion: 4, CleanStart: true})
	for i, payload := range []string{`{"msg_id":"x1","v":1}`, ` {"v":1, "msg_id":"x1"}`, `{"msg_id":42}`, `{"msg_id":42.0}`,
		`{"msg_id":42}`, `not json`, `not json`, `{"other":1}`, `{"other":1}`, `{"msg_id":{"a":1}}`} {
		m := &inflight.Message{Topic: "t", Payload: []byte(payload), QoS: 1}
		if err := h.b.Publish(old, oldC, m, uint16(i+1), 100); err != nil {
			t.Fatal(err)
		}
	}
	// x1 once, 42 once, 42.0 (another literal) once, each non-JSON and id-less payload, and the
	// object field (no id) are all delivered.
	if n := deliveries(h); n != 8 {
		t.Fatalf("%d deliveries, want 8", n)
	}
}

func TestDedupQoS0Ignored(t *testing.T) {
	h, _, pub, pubC := dedupHarness(t, 100, DedupOptions{})
	h.publishDedup(pub, pubC, "t", "m", 0, 0, "r1")
	h.publishDedup(pub, pubC, "t", "m", 1, 1, "r1")
	if n := deliveries(h); n != 2 {
		t.Fatalf("a QoS 0 copy is never stored and does not hold the id: %d deliveries, want 2", n)
	}
}

func TestDedupNoProblemInfoNoUserProperty(t *testing.T) {
	h, _, _, _ := dedupHarness(t, 100, DedupOptions{})
	pub, pubC := h.connectAs(ConnectRequest{ClientID: "quiet", ProtocolVersion: 5, CleanStart: true, NoProblemInfo: true})
	h.publishDedup(pub, pubC, "t", "m", 1, 1, "r1")
	deliveries(h)
	h.publishDedup(pub, pubC, "t", "m", 1, 2, "r1")
	h.j.commit()
	h.expectEvents("duplicate", "submit #1", "commit #1", "quiet <- PUBACK id=2 Success") // [MQTT-3.1.2-29]
}

// TestDedupRestoreKeepsTheWindow: the ids recovered from the file are in the window, less those
// that aged out while the broker was down and those beyond the count, which the next batches delete.
func TestDedupRestoreKeepsTheWindow(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	key := func(id string) string { return inflight.DedupKey(inflight.DedupScopeClient, "pub", id) }
	rec := &inflight.Recovered{Dedup: []inflight.DedupRecord{
		{Key: key("old"), At: now.Add(-6 * time.Minute).UnixNano()},
		{Key: key("a"), At: now.Add(-3 * time.Minute).UnixNano()},
		{Key: key("b"), At: now.Add(-2 * time.Minute).UnixNano(), Reason: 0x10},
		{Key: key("c"), At: now.Add(-1 * time.Minute).UnixNano()},
	}}
	rc := &recorder{}
	j := &fakeJournal{rec: rc}
	b := New(j, rec, Options{Dedup: DedupOptions{Property: "dedup-id", Window: 5 * time.Minute, Max: 2},
		Now: func() time.Time { return now }})
	t.Cleanup(b.Close)
	h := &harness{t: t, rec: rc, j: j, b: b}
	pub, pubC := h.connect("pub", 0, 0)
	for i, id := range []string{"c", "b", "old", "a"} {
		h.publishDedup(pub, pubC, "t", "m", 1, uint16(i+1), id)
	}
	h.j.commit()
	want := []string{"submit #1", "submit #2", "submit #3", "submit #4",
		"commit #1", "pub <- PUBACK id=1 Success dedup=duplicate",
		"commit #2", "pub <- PUBACK id=2 No matching subscribers dedup=duplicate",
		"commit #3", "pub <- PUBACK id=3 No matching subscribers",
		"commit #4", "pub <- PUBACK id=4 No matching subscribers"}
	ev := h.rec.take()
	if fmt.Sprint(ev) != fmt.Sprint(want) {
		t.Fatalf("after restore:\n got %q\nwant %q", ev, want)
	}
	// "old" (aged) and "a" (beyond the count) left the window at restore: they come back as new
	// messages, and their file records are replaced, not deleted (the duplicates' batches delete
	// nothing, only accepting batches do).
	recs := h.j.records()
	if len(recs) != 4 || !contains(recs[2], "put dedup c/pub/old reason=0x10") || contains(recs[2], "delete dedup c/pub/old") ||
		!contains(recs[3], "put dedup c/pub/a reason=0x10") {
		t.Errorf("batches after restore: %q", recs)
	}
}

// TestDedupWindowExactUnderCollisions: with every key hashing alike, the window still tells every
// key apart, and eviction keeps it so.
func TestDedupWindowExactUnderCollisions(t *testing.T) {
	w := newDedupWindow()
	w.hash = func(maphash.Seed, string) uint64 { return 7 }
	for i := range 100 {
		k := fmt.Sprint("k", i)
		if w.lookup(k) != nil {
			t.Fatalf("%s found before it was added", k)
		}
		w.add(k, int64(i), 0)
	}
	for range 50 {
		w.removeOldest()
	}
	for i := range 100 {
		e := w.lookup(fmt.Sprint("k", i))
		if (e != nil) != (i >= 50) || e != nil && e.at != int64(i) {
			t.Fatalf("k%d: found %v, want found=%t", i, e, i >= 50)
		}
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}
