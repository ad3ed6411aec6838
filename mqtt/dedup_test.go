package mqtt_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt"
	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

// dedupPublish is a PUBLISH carrying the user property dedup-id=dedupID.
func dedupPublish(topic string, qos byte, id uint16, payload, dedupID string) packets.Packet {
	pk := mqtttest.PublishPacket(topic, qos, id, []byte(payload), false)
	pk.Properties.User = []packets.UserProperty{{Key: "dedup-id", Val: dedupID}}
	return pk
}

// expectDuplicateAck expects the acknowledgement of a duplicate: typ, id, Success, and the user
// property that says so.
func expectDuplicateAck(t *testing.T, c *mqtttest.Client, typ byte, id uint16) {
	t.Helper()
	ack := c.ExpectAck(t, typ, id, 0x00)
	if len(ack.Properties.User) != 1 || ack.Properties.User[0] != (packets.UserProperty{Key: "dedup", Val: "duplicate"}) {
		t.Fatalf("ack of a duplicate: user properties %v, want dedup=duplicate", ack.Properties.User)
	}
}

// expectOnlyThenSentinel expects exactly one delivery of payload at qos 1 on topic, completed,
// and then the sentinel: nothing came twice in between. The dedup id must arrive unchanged.
func expectOnlyThenSentinel(t *testing.T, sub *mqtttest.Client, topic, payload, dedupID string) {
	t.Helper()
	p := sub.ExpectPublish(t, topic, 1, payload)
	sub.Puback(p.PacketID)
	if len(p.Properties.User) != 1 || p.Properties.User[0] != (packets.UserProperty{Key: "dedup-id", Val: dedupID}) {
		t.Errorf("delivery's user properties %v, want the publisher's dedup-id=%s unchanged", p.Properties.User, dedupID)
	}
	s := sub.ExpectPublish(t, topic, 1, "sentinel")
	sub.Puback(s.PacketID)
}

// A publisher that loses its state (Clean Start) and resends its QoS 2 message under a new packet
// id: the copy is answered with PUBREC and the duplicate property, completes, and is not delivered
// again.
func TestDedupResendAfterCleanStartDeliveredOnce(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t)
	sub, _ := connectDurable(t, b, v5, "sub")
	sub.SubscribeOK(t, 1, "d/#", 1)

	pub := connectClean(t, b, v5, "device")
	pub.Send(dedupPublish("d/1", 2, 1, "reading", "r-1"))
	pub.ExpectAck(t, packets.Pubrec, 1, 0x00)
	pub.Drop(t) // rebooted before PUBREL: no state left

	pub = connectClean(t, b, v5, "device")
	pub.Send(dedupPublish("d/1", 2, 77, "reading", "r-1"))
	expectDuplicateAck(t, pub, packets.Pubrec, 77)
	pub.Pubrel(77)
	pub.ExpectAck(t, packets.Pubcomp, 77, 0x00)
	publishQoS1(t, pub, "d/1", 78, "sentinel")
	expectOnlyThenSentinel(t, sub, "d/1", "reading", "r-1")

	st := b.Server().Stats()
	if st.DuplicatesByDedupID != 1 || st.DedupIDs != 1 {
		t.Errorf("Stats: %d duplicates by dedup id, %d ids; want 1 and 1", st.DuplicatesByDedupID, st.DedupIDs)
	}
}

// The window is in the file: after a restart, a copy is still a duplicate.
func TestDedupRestartKeepsTheWindow(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t)
	sub, _ := connectDurable(t, b, v5, "sub")
	sub.SubscribeOK(t, 1, "d/#", 1)
	pub := connectClean(t, b, v5, "device")
	pub.Send(dedupPublish("d/1", 1, 1, "reading", "r-1"))
	pub.ExpectAck(t, packets.Puback, 1, 0x00)

	b.Restart(t)
	sub = resume(t, b, v5, "sub")
	pub = connectClean(t, b, v5, "device")
	pub.Send(dedupPublish("d/1", 1, 2, "reading", "r-1"))
	expectDuplicateAck(t, pub, packets.Puback, 2)
	publishQoS1(t, pub, "d/1", 3, "sentinel")
	expectOnlyThenSentinel(t, sub, "d/1", "reading", "r-1")
}

// Copies arriving at once, from several connections at QoS 1 and QoS 2, keyed by topic: one
// delivery, every copy acknowledged.
func TestDedupConcurrentCopiesResolveToOne(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t, mqtttest.WithOptions(func(o *mqtt.Options) { o.DedupScope = "topic" }))
	sub, _ := connectDurable(t, b, v5, "sub")
	sub.SubscribeOK(t, 1, "d/#", 1)
	const copies = 8
	gws := make([]*mqtttest.Client, copies)
	for i := range gws {
		gws[i] = connectClean(t, b, v5, fmt.Sprint("gateway-", i))
	}
	var wg sync.WaitGroup
	for i, gw := range gws {
		wg.Go(func() { gw.Send(dedupPublish("d/1", byte(1+i%2), 5, "reading", "r-1")) })
	}
	wg.Wait()
	for i, gw := range gws {
		typ := byte(packets.Puback)
		if i%2 == 1 {
			typ = packets.Pubrec
		}
		gw.ExpectAck(t, typ, 5, 0x00)
	}
	publishQoS1(t, gws[0], "d/1", 6, "sentinel")
	expectOnlyThenSentinel(t, sub, "d/1", "reading", "r-1")
	if st := b.Server().Stats(); st.DuplicatesByDedupID != copies-1 {
		t.Errorf("%d duplicates by dedup id, want %d", st.DuplicatesByDedupID, copies-1)
	}
}

// refuseOnce refuses the first PUBLISH it is asked about and allows every later one.
type refuseOnce struct {
	mu      sync.Mutex
	refused bool
}

func (r *refuseOnce) CanPublish(*mqtt.Client, string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	first := !r.refused
	r.refused = true
	return !first
}
func (r *refuseOnce) CanSubscribe(*mqtt.Client, string) bool { return true }
func (r *refuseOnce) CanRead(string, string, string) bool    { return true }

// A refused message (0x87) does not enter the window: its retry is a new message.
func TestDedupRefusedStaysRetryable(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t, mqtttest.WithOptions(func(o *mqtt.Options) { o.Authorizer = &refuseOnce{} }))
	sub, _ := connectDurable(t, b, v5, "sub")
	sub.SubscribeOK(t, 1, "d/#", 1)
	pub := connectClean(t, b, v5, "device")
	pub.Send(dedupPublish("d/1", 1, 1, "reading", "r-1"))
	pub.ExpectAck(t, packets.Puback, 1, 0x87)
	pub.Send(dedupPublish("d/1", 1, 2, "reading", "r-1"))
	if ack := pub.ExpectID(t, packets.Puback, 2); ack.ReasonCode != 0x00 || len(ack.Properties.User) != 0 {
		t.Fatalf("retry after a refusal: PUBACK 0x%02X %v, want 0x00 and no duplicate property", ack.ReasonCode, ack.Properties.User)
	}
	publishQoS1(t, pub, "d/1", 3, "sentinel")
	expectOnlyThenSentinel(t, sub, "d/1", "reading", "r-1")
}

// 3.1.1 publishers give the id in a JSON field of the payload.
func TestDedupJSONFieldFor311(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t, mqtttest.WithOptions(func(o *mqtt.Options) { o.DedupJSONField = "msg_id" }))
	sub, _ := connectDurable(t, b, v5, "sub")
	sub.SubscribeOK(t, 1, "d/#", 1)
	const reading = `{"msg_id":"r-1","t":21.5}`
	pub := connectClean(t, b, v311, "old-device")
	publishQoS1(t, pub, "d/1", 1, reading)
	pub.Drop(t)
	pub = connectClean(t, b, v311, "old-device")
	publishQoS1(t, pub, "d/1", 1, reading)
	publishQoS1(t, pub, "d/1", 2, "sentinel")
	p := sub.ExpectPublish(t, "d/1", 1, reading)
	sub.Puback(p.PacketID)
	s := sub.ExpectPublish(t, "d/1", 1, "sentinel")
	sub.Puback(s.PacketID)
}

// DedupMax < 0 turns the feature off: the copy is delivered again.
func TestDedupOff(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t, mqtttest.WithOptions(func(o *mqtt.Options) { o.DedupMax = -1 }))
	sub, _ := connectDurable(t, b, v5, "sub")
	sub.SubscribeOK(t, 1, "d/#", 1)
	pub := connectClean(t, b, v5, "device")
	for id := range uint16(2) {
		pub.Send(dedupPublish("d/1", 1, id+1, "reading", "r-1"))
		pub.ExpectAck(t, packets.Puback, id+1, 0x00)
	}
	for range 2 {
		p := sub.ExpectPublish(t, "d/1", 1, "reading")
		sub.Puback(p.PacketID)
	}
}
