package session

import (
	"strings"
	"testing"
)

// loads is how many bodies the broker asked the journal for.
func (h *harness) loads() int {
	h.j.mu.Lock()
	defer h.j.mu.Unlock()
	return h.j.loads
}

// A live message goes to a connected session without a read of its body: deliver hands on the
// body it has, and the entry keeps it pinned. Queued for a session that is offline, it is read
// when the session comes back and takes it.
func TestLiveMessageIsNotReadBack(t *testing.T) {
	h := newHarness(t, Options{})
	on, onConn := h.connect("on", 3600, 1)
	h.subscribe(on, onConn, "t", 2)
	off, offConn := h.connect("off", 3600, 10)
	h.subscribe(off, offConn, "t", 2)
	h.b.Disconnected(off, offConn, false, nil)
	pub, pubConn := h.connect("pub", 0, 10)
	h.settle()

	h.publish(pub, pubConn, "t", "first", 1, 1)  // sent to "on" at once
	h.publish(pub, pubConn, "t", "second", 1, 2) // queued for "on": its Receive Maximum is 1
	h.settle()
	h.b.Puback(on, onConn, 1) // frees the slot: the queued one is sent
	h.settle()
	if n := h.loads(); n != 0 {
		t.Errorf("delivering live messages to a connected session read %d bodies, want 0", n)
	}

	got := h.resume("off")
	if len(got) != 2 || h.loads() != 2 {
		t.Errorf("the offline session got %q after %d body reads, want 2 PUBLISHes and 2 reads", got, h.loads())
	}
}

// resume connects id again without Clean Start, commits, and returns the PUBLISHes it was sent.
func (h *harness) resume(id string) []string {
	h.t.Helper()
	c := &recConn{name: id, rec: h.rec}
	h.b.Connect(ConnectRequest{ClientID: id, ProtocolVersion: 5, ExpiryInterval: 3600, ReceiveMax: 10}, c, func(bool, error) {})
	h.j.commit()
	var publishes []string
	for _, e := range h.rec.take() {
		if strings.HasPrefix(e, id+" <- PUBLISH") {
			publishes = append(publishes, e)
		}
	}
	return publishes
}

// A body the journal cannot give back is dropped as if delivered, logged and counted
// (Unreadable), and the session goes on with the next message.
func TestUnreadableBodyIsDroppedAndCounted(t *testing.T) {
	var drops []string
	h := newHarness(t, Options{OnDrop: func(clientID, topic string, why DropReason) {
		drops = append(drops, clientID+" "+topic+" "+string(why))
	}})
	off, offConn := h.connect("off", 3600, 10)
	h.subscribe(off, offConn, "t", 1)
	h.b.Disconnected(off, offConn, false, nil)
	pub, pubConn := h.connect("pub", 0, 10)
	h.publish(pub, pubConn, "t", "lost", 1, 1)
	h.publish(pub, pubConn, "t", "kept", 1, 2)
	h.settle()
	h.j.mu.Lock()
	for seq, m := range h.j.bodies {
		if string(m.Payload) == "lost" {
			delete(h.j.bodies, seq) // as if the file had lost it
		}
	}
	h.j.mu.Unlock()

	publishes := h.resume("off")
	if len(publishes) != 1 || !strings.Contains(publishes[0], "kept") {
		t.Errorf("after an unreadable body the session got %q, want only the next message", publishes)
	}
	if n := h.b.Metrics.Unreadable.Load(); n != 1 || len(drops) != 1 || drops[0] != "off  unreadable" {
		t.Errorf("Unreadable = %d, OnDrop told %q; want 1 and [\"off  unreadable\"]", n, drops)
	}
	h.b.mu.Lock()
	held := h.b.sessions["off"].heldBytes
	h.b.mu.Unlock()
	if want := int64(len("t") + len("kept")); held != want {
		t.Errorf("the session holds %d bytes, want %d (the dropped message's given back)", held, want)
	}
}
