package inflight

import (
	"reflect"
	"testing"
)

func TestInbound(t *testing.T) {
	var in Inbound // the zero value is ready
	if _, ok := in.Lookup(1); ok || in.Len() != 0 || in.Remove(1) {
		t.Fatal("empty table is not empty")
	}
	in.Add(7, 0x00)
	in.Add(1, 0x10)
	in.Add(65535, 0x97)
	in.Add(7, 0x91) // replaced, not added
	if r, ok := in.Lookup(7); !ok || r != 0x91 {
		t.Errorf("Lookup(7) = %#x, %v", r, ok)
	}
	if in.Len() != 3 {
		t.Errorf("Len = %d, want 3", in.Len())
	}
	want := []InboundRecord{{1, 0x10}, {7, 0x91}, {65535, 0x97}}
	if got := in.Records(); !reflect.DeepEqual(got, want) {
		t.Errorf("Records = %v, want %v (id order)", got, want)
	}
	if !in.Remove(7) || in.Remove(7) {
		t.Error("Remove(7) twice: want true then false")
	}
	if _, ok := in.Lookup(7); ok || in.Len() != 2 {
		t.Error("7 still there after Remove")
	}
}

func TestOutboundAllocateNeverReturnsAnIDInUse(t *testing.T) {
	var out Outbound
	add := func(id uint16, order uint64) {
		out.Add(&OutboundEntry{OutboundRecord: OutboundRecord{PacketID: id, State: PublishSent, Order: order}})
	}
	for want := uint16(1); want <= 3; want++ {
		id, ok := out.Allocate()
		if !ok || id != want {
			t.Fatalf("Allocate = %d, %v, want %d", id, ok, want)
		}
		add(id, uint64(id))
	}
	// A freed id is not reused at once: allocation goes on from the last one.
	out.Remove(2)
	if id, _ := out.Allocate(); id != 4 {
		t.Errorf("Allocate after freeing 2 = %d, want 4", id)
	}

	// Wrap past 65535, skipping ids in use, never 0.
	add(65534, 10)
	out.Remove(65534) // last stays 65534
	add(1, 11)        // 1 is in use again (it already was), 2 is free, 3 is in use
	id, ok := out.Allocate()
	if !ok || id != 65535 {
		t.Fatalf("Allocate = %d, %v, want 65535", id, ok)
	}
	add(id, 12)
	if id, ok := out.Allocate(); !ok || id != 2 {
		t.Fatalf("Allocate after 65535 = %d, %v, want 2 (1 in use, 0 never)", id, ok)
	}
}

func TestOutboundFullTable(t *testing.T) {
	var out Outbound
	seen := make(map[uint16]bool)
	for i := range maxPacketID {
		id, ok := out.Allocate()
		if !ok || id == 0 || seen[id] {
			t.Fatalf("allocation %d: id %d, ok %v (seen before: %v)", i, id, ok, seen[id])
		}
		seen[id] = true
		out.Add(&OutboundEntry{OutboundRecord: OutboundRecord{PacketID: id, Order: uint64(i)}})
	}
	if id, ok := out.Allocate(); ok {
		t.Fatalf("Allocate on a full table = %d, want none", id)
	}
	out.Remove(40000)
	if id, ok := out.Allocate(); !ok || id != 40000 {
		t.Fatalf("Allocate with only 40000 free = %d, %v", id, ok)
	}
}

func TestOutboundTable(t *testing.T) {
	var out Outbound
	if _, ok := out.Get(1); ok || out.Len() != 0 || len(out.InOrder()) != 0 {
		t.Fatal("empty table is not empty")
	}
	if _, ok := out.Remove(1); ok {
		t.Fatal("Remove on an empty table found something")
	}
	// Recovery adds entries with their stored ids, in any order; allocation continues after them.
	m := &Handle{Seq: 9}
	out.Add(&OutboundEntry{OutboundRecord: OutboundRecord{PacketID: 300, State: PubrelSent, Order: 5}})
	out.Add(&OutboundEntry{OutboundRecord: OutboundRecord{PacketID: 20, State: PublishSent, Order: 7, MsgSeq: 9}, Msg: m})
	out.Add(&OutboundEntry{OutboundRecord: OutboundRecord{PacketID: 100, State: PublishSent, Order: 6}})
	if id, _ := out.Allocate(); id != 301 {
		t.Errorf("Allocate after recovery = %d, want 301", id)
	}
	var orders []uint64
	for _, e := range out.InOrder() {
		orders = append(orders, e.Order)
	}
	if !reflect.DeepEqual(orders, []uint64{5, 6, 7}) {
		t.Errorf("InOrder orders = %v, want resend in delivery order 5, 6, 7", orders)
	}
	e, ok := out.Get(20)
	if !ok || e.Msg != m {
		t.Errorf("Get(20) = %+v, %v", e, ok)
	}
	e.State, e.MsgSeq, e.Msg = PubrelSent, 0, nil // PUBREC arrived: entries are changed in place
	if e2, _ := out.Get(20); e2.State != PubrelSent {
		t.Error("change through Get not kept")
	}
	if e, ok := out.Remove(300); !ok || e.PacketID != 300 || out.Len() != 2 {
		t.Errorf("Remove(300) = %+v, %v; Len %d", e, ok, out.Len())
	}
}
