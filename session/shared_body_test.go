package session

import (
	"slices"
	"strings"
	"testing"
)

// A message waiting in a shared subscription group's queue holds its index entry, not its body:
// routing a live message to an online member reads nothing, and a waiting one is read from the
// journal when a member comes back and takes it.
func TestSharedWaitingBodyReadWhenSent(t *testing.T) {
	h := newHarness(t, Options{})
	m, mC := h.connect("m", 3600, 10)
	h.subscribe(m, mC, "$share/g/t", 1)
	pub, pubC := h.connect("pub", 0, 10)
	h.settle()
	h.publish(pub, pubC, "t", "live", 1, 1) // sent to the online member at once
	h.settle()
	if n := h.loads(); n != 0 {
		t.Errorf("sending a live message to an online member read %d bodies, want 0", n)
	}
	h.b.Disconnected(m, mC, false, nil)
	h.publish(pub, pubC, "t", "waiting", 1, 2) // no member online: waits in the group queue
	h.settle()
	h.b.mu.Lock()
	g := h.b.shared.groups["$share/g/t"]
	if len(g.waiting) != 1 || g.waiting[0].body != nil {
		t.Errorf("group queue %d entries, body held %v; want 1 without its body", len(g.waiting), len(g.waiting) == 1 && g.waiting[0].body != nil)
	}
	h.b.mu.Unlock()

	got := h.resume("m")
	if !slices.ContainsFunc(got, func(p string) bool { return strings.HasSuffix(p, " t waiting") }) {
		t.Errorf("the member got %q, want the waiting message", got)
	}
	if n := h.loads(); n < 1 {
		t.Errorf("the waiting message was sent after %d body reads, want it read from the journal", n)
	}
}

// A waiting group message whose body the journal cannot give back is dropped for the group
// (OnDrop names the group), counted as Unreadable, and its group record deleted; the next waiting
// message goes to the member.
func TestSharedUnreadableBodyIsDropped(t *testing.T) {
	var drops []string
	h := newHarness(t, Options{OnDrop: func(clientID, topic string, why DropReason) {
		drops = append(drops, clientID+" "+topic+" "+string(why))
	}})
	m, mC := h.connect("m", 3600, 10)
	h.subscribe(m, mC, "$share/g/t", 1)
	h.b.Disconnected(m, mC, false, nil)
	pub, pubC := h.connect("pub", 0, 10)
	h.publish(pub, pubC, "t", "lost", 1, 1)
	h.publish(pub, pubC, "t", "kept", 1, 2)
	h.settle()
	h.j.mu.Lock()
	for seq, msg := range h.j.bodies {
		if string(msg.Payload) == "lost" {
			delete(h.j.bodies, seq) // as if the file had lost it
		}
	}
	h.j.mu.Unlock()

	h.j.step()
	got := h.resume("m")
	if len(got) != 1 || !strings.HasSuffix(got[0], " t kept") {
		t.Errorf("after an unreadable body the member got %q, want only the next message", got)
	}
	if n := h.b.Metrics.Unreadable.Load(); n != 1 || !slices.Equal(drops, []string{"$share/g/t  unreadable"}) {
		t.Errorf("Unreadable = %d, OnDrop told %q; want 1 and [\"$share/g/t  unreadable\"]", n, drops)
	}
	var deleted bool
	for _, b := range h.j.records() {
		deleted = deleted || slices.ContainsFunc(b, func(l string) bool { return strings.HasPrefix(l, "delete shared g t 1") })
	}
	if !deleted {
		t.Errorf("the dropped message's group record is not deleted: %q", h.j.records())
	}
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	if g := h.b.shared.groups["$share/g/t"]; g == nil || len(g.waiting) != 0 || g.heldBytes != 0 {
		t.Errorf("group %+v, want its queue empty and no bytes held", g)
	}
}
