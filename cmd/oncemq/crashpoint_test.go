package main

// Crash-point tests: one per durability rule of docs/ARCHITECTURE.md ("Durability rules"). Each
// runs the real binary with ONCEMQ_CRASH_AT set, drives the flow with raw MQTT 5.0 clients until the
// broker SIGKILLs itself between a commit and the packet the commit allows, checks that the packet
// never left, restarts the binary on the same data directory without the crash point, resumes the
// clients as correct clients do (Clean Start 0, Session Present 1, resend PUBLISH with DUP and the
// same id, resend PUBREL), and counts deliveries up to a sentinel message published last. Rule ids
// are the MQTT specifications' conformance statements.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/oncemq/oncemq/cmd/internal/oncemqtest"
	"github.com/oncemq/oncemq/cmd/oncemq/internal/mqttclient"
)

const (
	rawExpectTimeout = 10 * time.Second // for a packet that must come; only a failure waits this long
	crashTopic       = "crash/t"
	sentinel         = "sentinel" // published last: every earlier delivery arrives before it
	crashSubID       = "crash-sub"
	crashPubID       = "crash-pub"
	sessionExpiry    = 3600
	// receiveUntilSentinel gives up after this many packets, or this long.
	maxBeforeSentinel = 100000
	sentinelTimeout   = 2 * time.Minute
)

// rawClient is a raw MQTT 5.0 client for exact protocol scripts, on the mqttclient transport: the
// test writes the packets it builds and reads the broker's packets one by one. It has no session
// logic of its own: the test is the client.
type rawClient struct {
	t    testing.TB
	name string
	conn *mqttclient.Conn
	recv chan rawRead // what the reader read, in order; an entry with err is the last
	done chan struct{}
	once sync.Once
}

type rawRead struct {
	pk  packets.Packet
	err error // the connection ended (io.EOF, reset) or sent something undecodable
}

func dialRaw(t testing.TB, addr, name string) *rawClient {
	t.Helper()
	conn, err := mqttclient.Dial(context.Background(), addr, rawExpectTimeout)
	if err != nil {
		t.Fatalf("%s: dial %s: %v", name, addr, err)
	}
	c := &rawClient{t: t, name: name, conn: conn, recv: make(chan rawRead, 1024), done: make(chan struct{})}
	go c.readLoop()
	t.Cleanup(c.close)
	return c
}

func (c *rawClient) close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.conn.Close()
	})
}

// readLoop is the connection's only reader. The decoder checks the fixed header flags (PUBREL must
// be 0x62).
func (c *rawClient) readLoop() {
	for {
		pk, err := c.conn.Read()
		select {
		case c.recv <- rawRead{pk, err}:
		case <-c.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// describe prints a packet for failure messages, with the payload of a PUBLISH.
func describe(pk *packets.Packet) string { return mqttclient.Describe(*pk) }

func (c *rawClient) write(pk packets.Packet) {
	c.t.Helper()
	if err := c.conn.Write(pk); err != nil {
		c.t.Fatalf("%s: write %s: %v", c.name, describe(&pk), err)
	}
}

// next returns the next packet, failing if the connection ends or nothing comes in time.
func (c *rawClient) next(waitingFor string) packets.Packet {
	c.t.Helper()
	select {
	case r := <-c.recv:
		if r.err != nil {
			c.t.Fatalf("%s: connection ended while waiting for %s: %v", c.name, waitingFor, r.err)
		}
		return r.pk
	case <-time.After(rawExpectTimeout):
		c.t.Fatalf("%s: nothing received within %v while waiting for %s", c.name, rawExpectTimeout, waitingFor)
	}
	panic("unreachable")
}

// expect returns the next packet, which must be of type typ with packet id id (0: any id).
func (c *rawClient) expect(typ byte, id uint16) packets.Packet {
	c.t.Helper()
	want := packets.PacketNames[typ]
	if id != 0 {
		want = fmt.Sprintf("%s(id=%d)", want, id)
	}
	pk := c.next(want)
	if pk.FixedHeader.Type != typ || id != 0 && pk.PacketID != id {
		c.t.Fatalf("%s: got %s, want %s", c.name, describe(&pk), want)
	}
	return pk
}

// expectAck returns the next packet, which must be the ack typ for id with the given reason code.
func (c *rawClient) expectAck(typ byte, id uint16, reason byte) packets.Packet {
	c.t.Helper()
	pk := c.expect(typ, id)
	if pk.ReasonCode != reason {
		c.t.Fatalf("%s: got %s, want reason 0x%02X", c.name, describe(&pk), reason)
	}
	return pk
}

// untilClosed reads until the broker's end closes the connection and returns what came before.
func (c *rawClient) untilClosed() []packets.Packet {
	c.t.Helper()
	var got []packets.Packet
	deadline := time.After(oncemqtest.ExitTimeout)
	for {
		select {
		case r := <-c.recv:
			if r.err != nil {
				return got
			}
			got = append(got, r.pk)
		case <-deadline:
			c.t.Fatalf("%s: the connection is still open %v after the broker died", c.name, oncemqtest.ExitTimeout)
		}
	}
}

// sendConnect sends CONNECT with Clean Start 0 and Session Expiry 3600.
func (c *rawClient) sendConnect(clientID string) {
	c.t.Helper()
	c.write(packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Connect},
		Connect:     packets.ConnectParams{ProtocolName: []byte("MQTT"), ClientIdentifier: clientID, Clean: false},
		Properties:  packets.Properties{SessionExpiryInterval: sessionExpiry, SessionExpiryIntervalFlag: true},
	})
}

// connect sends CONNECT with Clean Start 0 and Session Expiry 3600 and checks the CONNACK.
func (c *rawClient) connect(clientID string, wantPresent bool) {
	c.t.Helper()
	c.sendConnect(clientID)
	ack := c.expect(packets.Connack, 0)
	if ack.ReasonCode != 0 || ack.SessionPresent != wantPresent {
		c.t.Fatalf("%s: got %s, want success with Session Present %t [MQTT-3.2.2-2] [MQTT-3.2.2-3]",
			c.name, describe(&ack), wantPresent)
	}
}

func (c *rawClient) subscribe(id uint16, filter string, qos byte) {
	c.t.Helper()
	c.write(mqttclient.Subscribe(id, filter, qos))
	ack := c.expect(packets.Suback, id)
	if len(ack.ReasonCodes) != 1 || ack.ReasonCodes[0] != qos {
		c.t.Fatalf("%s: SUBACK reason codes %v, want [%d]", c.name, ack.ReasonCodes, qos)
	}
}

func (c *rawClient) publish(id uint16, payload string, qos byte, dup bool) {
	c.t.Helper()
	c.write(mqttclient.Publish(crashTopic, qos, id, []byte(payload), dup))
}

// ack sends a PUBACK, PUBREC, PUBREL or PUBCOMP with reason 0.
func (c *rawClient) ack(typ byte, id uint16) {
	c.t.Helper()
	c.write(mqttclient.Ack(typ, id, 0x00)) // PUBREL is 0x62 [MQTT-3.6.1-1]
}

// sync makes sure the broker has handled everything this client sent so far: the reader handles
// packets in order, and answers PINGREQ only after submitting the earlier ones' commits, which the
// journal applies in submission order.
func (c *rawClient) sync() {
	c.t.Helper()
	c.write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingreq}})
	c.expect(packets.Pingresp, 0)
}

// publishQoS2 runs a whole QoS 2 flow as publisher, expecting a successful PUBREC (0x00: someone
// subscribes) and PUBCOMP 0x00.
func (c *rawClient) publishQoS2(id uint16, payload string) {
	c.t.Helper()
	c.publish(id, payload, 2, false)
	c.expectAck(packets.Pubrec, id, 0x00)
	c.ack(packets.Pubrel, id)
	c.expectAck(packets.Pubcomp, id, 0x00)
}

// receiveUntilSentinel plays a correct subscriber: it answers every PUBLISH (PUBACK, or PUBREC) and
// every PUBREL (PUBCOMP) until the sentinel's delivery is complete, and returns every PUBLISH
// received before the sentinel, duplicates included. Deliveries to one session keep their order, so
// a duplicate routed before the sentinel arrives before it.
func (c *rawClient) receiveUntilSentinel() []packets.Packet {
	c.t.Helper()
	var got []packets.Packet
	var sentinelID uint16
	deadline := time.Now().Add(sentinelTimeout)
	for n := 0; ; n++ {
		if n > maxBeforeSentinel || time.Now().After(deadline) {
			c.t.Fatalf("%s: no sentinel within %d packets or %v", c.name, maxBeforeSentinel, sentinelTimeout)
		}
		pk := c.next("the sentinel message")
		switch pk.FixedHeader.Type {
		case packets.Publish:
			if string(pk.Payload) == sentinel {
				if pk.FixedHeader.Qos < 2 {
					if pk.FixedHeader.Qos == 1 {
						c.ack(packets.Puback, pk.PacketID)
					}
					return got
				}
				sentinelID = pk.PacketID
			} else {
				got = append(got, pk)
			}
			switch pk.FixedHeader.Qos {
			case 1:
				c.ack(packets.Puback, pk.PacketID)
			case 2:
				c.ack(packets.Pubrec, pk.PacketID)
			}
		case packets.Pubrel:
			c.ack(packets.Pubcomp, pk.PacketID)
			if sentinelID != 0 && pk.PacketID == sentinelID {
				return got
			}
		default:
			c.t.Fatalf("%s: unexpected %s while receiving", c.name, describe(&pk))
		}
	}
}

func payloads(pks []packets.Packet) []string {
	var out []string
	for i := range pks {
		out = append(out, string(pks[i].Payload))
	}
	return out
}

// crashBroker starts the binary with ONCEMQ_CRASH_AT=crashAt, a subscriber on crashTopic at subQoS
// and a publisher, both 5.0 with Clean Start 0 and Session Expiry 3600 on fresh sessions.
func crashBroker(t *testing.T, crashAt string, subQoS byte, args ...string) (b *oncemqtest.Broker, sub, pub *rawClient) {
	t.Helper()
	b = startCrashableBroker(t, t.TempDir(), []string{crashEnv + "=" + crashAt}, args...)
	sub = dialRaw(t, b.Addr, "subscriber")
	sub.connect(crashSubID, false)
	sub.subscribe(1, crashTopic, subQoS)
	pub = dialRaw(t, b.Addr, "publisher")
	pub.connect(crashPubID, false)
	return b, sub, pub
}

// resume connects clientID again to the restarted broker: Clean Start 0 must find the session
// [MQTT-3.1.2-5] [MQTT-3.2.2-3].
func resume(t *testing.T, b *oncemqtest.Broker, name, clientID string) *rawClient {
	t.Helper()
	c := dialRaw(t, b.Addr, name)
	c.connect(clientID, true)
	return c
}

// crashed waits for the broker to die by SIGKILL at the armed crash point and checks that c received
// nothing before its connection ended: the crash point comes before the ack (and before the
// deliveries the same commit allows).
func crashed(t *testing.T, b *oncemqtest.Broker, clients ...*rawClient) {
	t.Helper()
	b.WaitKilled(t)
	for _, c := range clients {
		if got := c.untilClosed(); len(got) > 0 {
			t.Fatalf("%s received %s before the crash; the crash point comes after the commit and before any packet it allows",
				c.name, describe(&got[0]))
		}
	}
}

// checkOnce fails unless the deliveries before the sentinel are exactly want, in order.
func checkOnce(t *testing.T, got []packets.Packet, want ...string) {
	t.Helper()
	if p := payloads(got); !slices.Equal(p, want) {
		var ds []string
		for i := range got {
			ds = append(ds, describe(&got[i]))
		}
		t.Fatalf("subscriber received %q before the sentinel, want exactly %q: %v", p, want, ds)
	}
}

// Row "QoS 2 PUBLISH, id not in the inbound table": the broker dies after committing the inbound
// id and the fan-out, before PUBREC [MQTT-4.3.3-8] (checklist B3, B20). The publisher resends with
// DUP=1 and the same id: the id is already in the inbound table, so it gets PUBREC with the same
// reason code and no second routing [MQTT-4.3.3-10] (B4). The subscriber gets the message exactly
// once.
func TestCrashBeforePubrec(t *testing.T) {
	t.Parallel()
	testCrashBeforePubrec(t)
}

// The same row with --sync none: no fsync, but a process crash must still lose nothing, as the
// commit is in the OS page cache before PUBREC (README.md, "--sync none").
func TestCrashBeforePubrecSyncNone(t *testing.T) {
	t.Parallel()
	testCrashBeforePubrec(t, "--sync", "none")
}

func testCrashBeforePubrec(t *testing.T, args ...string) {
	b, sub, pub := crashBroker(t, crashBeforePubrec, 2, args...)
	pub.publish(7, "m1", 2, false)
	crashed(t, b, pub, sub)

	b = b.Restart(t, nil, args...)
	pub = resume(t, b, "publisher after restart", crashPubID)
	pub.publish(7, "m1", 2, true)          // a correct client resends with DUP=1 and the same id
	pub.expectAck(packets.Pubrec, 7, 0x00) // the reason code of the first time: a subscriber matched
	pub.ack(packets.Pubrel, 7)
	pub.expectAck(packets.Pubcomp, 7, 0x00)

	sub = resume(t, b, "subscriber after restart", crashSubID)
	pub.publishQoS2(8, sentinel)
	checkOnce(t, sub.receiveUntilSentinel(), "m1")
}

// Row "PUBREL from a client": the broker dies after committing the removal of the inbound id,
// before PUBCOMP [MQTT-4.3.3-11] (checklist B5, B20). The publisher resends PUBREL and gets
// PUBCOMP 0x92, as the id is gone (B6); a new PUBLISH that reuses the id is a new message
// [MQTT-4.3.3-12] (B7), delivered once, and the first message is not delivered again.
func TestCrashBeforePubcomp(t *testing.T) {
	t.Parallel()
	b, sub, pub := crashBroker(t, crashBeforePubcomp, 2)
	pub.publish(9, "A", 2, false)
	pub.expectAck(packets.Pubrec, 9, 0x00)
	// Method B: the subscriber gets the message before PUBREL (B10). It completes the delivery, and
	// sync makes sure its PUBCOMP is committed before the crash.
	pk := sub.expect(packets.Publish, 0)
	if string(pk.Payload) != "A" || pk.FixedHeader.Qos != 2 || pk.FixedHeader.Dup {
		t.Fatalf("subscriber got %s, want the first delivery of A at QoS 2 with DUP=0", describe(&pk))
	}
	sub.ack(packets.Pubrec, pk.PacketID)
	sub.expectAck(packets.Pubrel, pk.PacketID, 0x00)
	sub.ack(packets.Pubcomp, pk.PacketID)
	sub.sync()
	pub.ack(packets.Pubrel, 9)
	crashed(t, b, pub, sub)

	b = b.Restart(t, nil)
	pub = resume(t, b, "publisher after restart", crashPubID)
	pub.ack(packets.Pubrel, 9)              // a correct client resends PUBREL [MQTT-4.4.0-1]
	pub.expectAck(packets.Pubcomp, 9, 0x92) // the removal was committed before the crash point
	sub = resume(t, b, "subscriber after restart", crashSubID)
	pub.publishQoS2(9, "B") // the id is free again: a new message
	pub.publishQoS2(10, sentinel)
	checkOnce(t, sub.receiveUntilSentinel(), "B")
}

// Row "QoS 1 PUBLISH": the broker dies after committing the fan-out, before PUBACK
// [MQTT-4.3.2-4]. The publisher resends with DUP=1 and gets PUBACK. QoS 1 is at least once: the
// message must not be lost; a duplicate (the committed copy plus the resent one) is allowed.
func TestCrashBeforePuback(t *testing.T) {
	t.Parallel()
	b, sub, pub := crashBroker(t, crashBeforePuback, 1)
	pub.publish(3, "q1", 1, false)
	crashed(t, b, pub, sub)

	b = b.Restart(t, nil)
	pub = resume(t, b, "publisher after restart", crashPubID)
	pub.publish(3, "q1", 1, true)
	pub.expectAck(packets.Puback, 3, 0x00)
	sub = resume(t, b, "subscriber after restart", crashSubID)
	pub.publish(4, sentinel, 1, false)
	pub.expectAck(packets.Puback, 4, 0x00)
	got := sub.receiveUntilSentinel()
	for _, p := range payloads(got) {
		if p != "q1" {
			t.Fatalf("subscriber received %q, want only q1 before the sentinel", p)
		}
	}
	switch len(got) {
	case 0:
		t.Fatal("the QoS 1 message acknowledged after the restart was lost")
	case 1, 2:
		t.Logf("QoS 1 message delivered %d time(s) (duplicates are allowed at QoS 1)", len(got))
	default:
		t.Fatalf("QoS 1 message delivered %d times: one committed copy plus one resend make at most 2", len(got))
	}
}

// Row "delivery to a subscriber": the broker dies after recording the outbound id and the message
// in flight, before the PUBLISH to the subscriber (checklist C19). On resume the subscriber gets it
// with its id (DUP=1 is allowed on this first transmission, as the broker cannot know it was never
// sent) [MQTT-4.4.0-1] [MQTT-3.3.1-1], and exactly once overall. The publisher may or may not have
// got its PUBREC before the crash; it carries on accordingly.
func TestCrashBeforePublish(t *testing.T) {
	t.Parallel()
	b, sub, pub := crashBroker(t, crashBeforePublish, 2)
	pub.publish(11, "p", 2, false)
	crashed(t, b, sub)
	gotPubrec := false
	for _, pk := range pub.untilClosed() {
		if pk.FixedHeader.Type != packets.Pubrec || pk.PacketID != 11 || pk.ReasonCode != 0 || gotPubrec {
			t.Fatalf("publisher received %s before the crash, want at most PUBREC(id=11 reason=0x00)", describe(&pk))
		}
		gotPubrec = true
	}
	t.Logf("the publisher got its PUBREC before the crash: %t", gotPubrec)

	b = b.Restart(t, nil)
	pub = resume(t, b, "publisher after restart", crashPubID)
	if !gotPubrec {
		pub.publish(11, "p", 2, true)
		pub.expectAck(packets.Pubrec, 11, 0x00)
	}
	pub.ack(packets.Pubrel, 11)
	pub.expectAck(packets.Pubcomp, 11, 0x00)

	sub = resume(t, b, "subscriber after restart", crashSubID)
	pub.publishQoS2(12, sentinel)
	got := sub.receiveUntilSentinel()
	checkOnce(t, got, "p")
	if pk := got[0]; pk.FixedHeader.Qos != 2 || pk.PacketID == 0 {
		t.Fatalf("resumed delivery %s, want QoS 2 with a packet id", describe(&pk))
	}
}

// Row "PUBREC < 0x80 from a subscriber": the subscriber sent PUBREC and the broker died after
// committing "PUBREL sent", before PUBREL [MQTT-4.3.3-4]. On resume the subscriber gets the PUBREL
// again, not the PUBLISH [MQTT-4.3.3-5] [MQTT-4.4.0-1] (checklist C5, C6).
func TestCrashBeforePubrel(t *testing.T) {
	t.Parallel()
	b, sub, pub := crashBroker(t, crashBeforePubrel, 2)
	pub.publishQoS2(13, "r")
	pk := sub.expect(packets.Publish, 0)
	if string(pk.Payload) != "r" || pk.FixedHeader.Qos != 2 {
		t.Fatalf("subscriber got %s, want r at QoS 2", describe(&pk))
	}
	id := pk.PacketID
	sub.ack(packets.Pubrec, id)
	crashed(t, b, sub, pub)

	b = b.Restart(t, nil)
	sub = resume(t, b, "subscriber after restart", crashSubID)
	sub.expectAck(packets.Pubrel, id, 0x00) // first thing after CONNACK, and no PUBLISH of r
	sub.ack(packets.Pubcomp, id)
	pub = resume(t, b, "publisher after restart", crashPubID)
	pub.publishQoS2(14, sentinel)
	checkOnce(t, sub.receiveUntilSentinel())
}

// ONCEMQ_CRASH_AT=POINT:N dies at the Nth hit, not before: the first QoS 2 message goes through,
// the second kills the broker before its PUBREC. Each is delivered exactly once.
func TestCrashAtNthHit(t *testing.T) {
	t.Parallel()
	b, sub, pub := crashBroker(t, crashBeforePubrec+":2", 2)
	pub.publishQoS2(1, "first")
	pk := sub.expect(packets.Publish, 0)
	if string(pk.Payload) != "first" {
		t.Fatalf("subscriber got %s, want first", describe(&pk))
	}
	sub.ack(packets.Pubrec, pk.PacketID)
	sub.expectAck(packets.Pubrel, pk.PacketID, 0x00)
	sub.ack(packets.Pubcomp, pk.PacketID)
	sub.sync()
	pub.publish(2, "second", 2, false)
	crashed(t, b, pub, sub)

	b = b.Restart(t, nil)
	pub = resume(t, b, "publisher after restart", crashPubID)
	pub.publish(2, "second", 2, true)
	pub.expectAck(packets.Pubrec, 2, 0x00)
	pub.ack(packets.Pubrel, 2)
	pub.expectAck(packets.Pubcomp, 2, 0x00)
	sub = resume(t, b, "subscriber after restart", crashSubID)
	pub.publishQoS2(3, sentinel)
	checkOnce(t, sub.receiveUntilSentinel(), "second")
}

// Row "delivery to a subscriber", from the queue: the subscriber was offline when the message came,
// so it was queued; on resume the broker moves it to the outbound table, commits, and dies before
// the PUBLISH. After the restart the subscriber gets it once, with the id the broker recorded.
func TestCrashBeforePublishFromQueue(t *testing.T) {
	t.Parallel()
	b, sub, pub := crashBroker(t, crashBeforePublish, 2)
	sub.write(mqttclient.Disconnect(0x00))
	// The broker closes the socket after it has marked the session offline.
	if got := sub.untilClosed(); len(got) > 0 {
		t.Fatalf("subscriber received %s after its DISCONNECT", describe(&got[0]))
	}
	pub.publishQoS2(5, "queued")
	if !b.Running() {
		t.Fatal("the broker died while the subscriber was offline: nothing was sent to it")
	}

	sub = dialRaw(t, b.Addr, "subscriber resuming")
	sub.sendConnect(crashSubID)
	crashed(t, b, pub)
	for _, pk := range sub.untilClosed() { // CONNACK may have left before the crash point
		if pk.FixedHeader.Type != packets.Connack {
			t.Fatalf("subscriber received %s before the crash; the crash point comes before the PUBLISH", describe(&pk))
		}
	}

	b = b.Restart(t, nil)
	sub = resume(t, b, "subscriber after restart", crashSubID)
	pub = resume(t, b, "publisher after restart", crashPubID)
	pub.publishQoS2(6, sentinel)
	checkOnce(t, sub.receiveUntilSentinel(), "queued")
}

// Row "PUBREC < 0x80 from a subscriber", for a delivery resent on resume: the subscriber got the
// PUBLISH, dropped the connection without PUBREC, got it again with DUP=1 and the same id
// [MQTT-3.3.1-1], sent PUBREC, and the broker died before PUBREL. After the restart it gets PUBREL,
// not the PUBLISH (checklist C5, C6).
func TestCrashBeforePubrelAfterResend(t *testing.T) {
	t.Parallel()
	b, sub, pub := crashBroker(t, crashBeforePubrel, 2)
	pub.publishQoS2(21, "resent")
	first := sub.expect(packets.Publish, 0)
	sub.close() // no PUBREC: the delivery stays unacknowledged

	sub = resume(t, b, "subscriber resuming", crashSubID)
	again := sub.expect(packets.Publish, first.PacketID)
	if string(again.Payload) != "resent" || !again.FixedHeader.Dup {
		t.Fatalf("resumed delivery %s, want the same message with DUP=1 and id %d", describe(&again), first.PacketID)
	}
	sub.ack(packets.Pubrec, again.PacketID)
	crashed(t, b, sub, pub)

	b = b.Restart(t, nil)
	sub = resume(t, b, "subscriber after restart", crashSubID)
	sub.expectAck(packets.Pubrel, first.PacketID, 0x00)
	sub.ack(packets.Pubcomp, first.PacketID)
	pub = resume(t, b, "publisher after restart", crashPubID)
	pub.publishQoS2(22, sentinel)
	checkOnce(t, sub.receiveUntilSentinel())
}

// The crash points of a binary built with -tags failpoint (session/internal/failpoint).
const (
	crashEnv           = "ONCEMQ_CRASH_AT"
	crashBeforePubrec  = "before-pubrec"
	crashBeforePuback  = "before-puback"
	crashBeforePubcomp = "before-pubcomp"
	crashBeforePublish = "before-publish"
	crashBeforePubrel  = "before-pubrel"
)
