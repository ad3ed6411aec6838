package mqtttest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt/mqtttest/rawpacket"
)

// Timeouts of the Expect helpers: long for what must come, so that a slow machine does not fail a
// test; short for what must not, so that the suite stays fast.
const (
	ExpectTimeout  = 5 * time.Second
	NothingTimeout = 300 * time.Millisecond
)

// Client is a raw MQTT client: it writes exactly the packets a test builds (with rawpacket, or raw
// bytes) and reads exactly what the broker sends, packet by packet. A background goroutine
// reads and decodes; the Expect helpers wait on what it read.
//
// Write helpers fail the test given to Dial; Expect helpers take the test to fail, so they can be
// used from a subtest. None may be called from a goroutine other than the test's.
type Client struct {
	// Version is the protocol level used to encode and decode: 4 (3.1.1) or 5 (5.0).
	Version byte

	t    testing.TB
	conn net.Conn

	recv chan Received // what the reader read, in order; an entry with Err ends it
	done chan struct{} // closed by Close: the reader stops

	closeOnce sync.Once
	closedErr error // set once an entry with Err was taken from recv
	last      Received
}

// Received is one packet read from the broker, or the error that ended reading.
type Received struct {
	Packet packets.Packet
	Raw    []byte // the packet's bytes, fixed header included
	Err    error  // non-nil: the connection ended (io.EOF for a clean close) or sent garbage
}

// Dial opens a TCP connection to addr. Nothing is sent: call Connect or write what the test needs.
// The connection is closed in t's cleanup.
func Dial(t testing.TB, addr string, version byte) *Client {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, ExpectTimeout)
	if err != nil {
		t.Fatalf("mqtttest: dial %s: %v", addr, err)
	}
	return NewClient(t, nc, version)
}

// NewClient is Dial over a connection the test opened itself: TLS, or MQTT over WebSocket
// (package mqtt/websocket's Dial).
func NewClient(t testing.TB, nc net.Conn, version byte) *Client {
	t.Helper()
	c := &Client{
		Version: version,
		t:       t,
		conn:    nc,
		recv:    make(chan Received, 1024),
		done:    make(chan struct{}),
	}
	go c.readLoop()
	t.Cleanup(c.Close)
	return c
}

// Conn is the underlying connection.
func (c *Client) Conn() net.Conn { return c.conn }

// Close closes the connection at once, without DISCONNECT: an abnormal end for the broker.
func (c *Client) Close() {
	c.closeOnce.Do(func() {
		close(c.done)
		_ = c.conn.Close()
	})
}

// readLoop reads and decodes packets until the connection ends.
func (c *Client) readLoop() {
	br := bufio.NewReader(c.conn)
	for {
		r := readOne(br, c.Version)
		select {
		case c.recv <- r:
		case <-c.done:
			return
		}
		if r.Err != nil {
			return
		}
	}
}

// readOne reads one packet; it fails on an encoding the broker must never send (a Remaining Length
// that is not minimal, bad fixed header flags, a client-only packet type) as well as on a closed
// connection.
func readOne(br *bufio.Reader, version byte) (r Received) {
	pk, err := rawpacket.ReadFromServer(br, version, 0, &r.Raw)
	r.Packet = pk
	switch {
	case errors.Is(err, io.EOF):
		r.Err = err // a clean close, between packets
	case err != nil:
		r.Err = fmt.Errorf("broker sent bad bytes or the connection ended inside a packet (% x): %w", r.Raw, err)
	}
	return r
}

// Encode encodes pk for protocol version; see rawpacket.Encode.
func Encode(pk packets.Packet, version byte) ([]byte, error) { return rawpacket.Encode(pk, version) }

// WriteRaw writes b as is.
func (c *Client) WriteRaw(b []byte) {
	c.t.Helper()
	_ = c.conn.SetWriteDeadline(time.Now().Add(ExpectTimeout))
	if _, err := c.conn.Write(b); err != nil {
		c.t.Fatalf("mqtttest: write % x: %v", b, err)
	}
}

// Send encodes pk in the client's version and writes it.
func (c *Client) Send(pk packets.Packet) {
	c.t.Helper()
	b, err := Encode(pk, c.Version)
	if err != nil {
		c.t.Fatalf("mqtttest: encode %s: %v", Describe(pk), err)
	}
	c.WriteRaw(b)
}

// ConnectOption changes the CONNECT packet built by Connect and SendConnect.
type ConnectOption func(*packets.Packet)

// KeepAlive sets the Keep Alive in seconds (default 0: none).
func KeepAlive(seconds uint16) ConnectOption {
	return func(pk *packets.Packet) { pk.Connect.Keepalive = seconds }
}

// ReceiveMaximum sets the client's Receive Maximum (5.0).
func ReceiveMaximum(n uint16) ConnectOption {
	return func(pk *packets.Packet) { pk.Properties.ReceiveMaximum = n }
}

// MaximumPacketSize sets the client's Maximum Packet Size (5.0).
func MaximumPacketSize(n uint32) ConnectOption {
	return func(pk *packets.Packet) { pk.Properties.MaximumPacketSize = n }
}

// Will sets a Will Message.
func Will(topic string, payload []byte, qos byte, retain bool) ConnectOption {
	return func(pk *packets.Packet) {
		pk.Connect.WillFlag = true
		pk.Connect.WillTopic = topic
		pk.Connect.WillPayload = payload
		pk.Connect.WillQos = qos
		pk.Connect.WillRetain = retain
	}
}

// WillDelay sets the Will Delay Interval in seconds (5.0).
func WillDelay(seconds uint32) ConnectOption {
	return func(pk *packets.Packet) { pk.Connect.WillProperties.WillDelayInterval = seconds }
}

// ConnectPacket builds a CONNECT. clean is 3.1.1 CleanSession or 5.0 Clean Start; sessionExpiry is
// the 5.0 Session Expiry Interval (absent when 0; ignored in 3.1.1).
func ConnectPacket(version byte, clientID string, clean bool, sessionExpiry uint32, opts ...ConnectOption) packets.Packet {
	pk := rawpacket.Connect(version, rawpacket.ConnectOptions{ClientID: clientID, CleanStart: clean, SessionExpiry: sessionExpiry})
	for _, o := range opts {
		o(&pk)
	}
	return pk
}

// SendConnect writes a CONNECT; see ConnectPacket.
func (c *Client) SendConnect(clientID string, clean bool, sessionExpiry uint32, opts ...ConnectOption) {
	c.t.Helper()
	c.Send(ConnectPacket(c.Version, clientID, clean, sessionExpiry, opts...))
}

// Connect writes a CONNECT and expects a successful CONNACK, which it returns.
func (c *Client) Connect(t testing.TB, clientID string, clean bool, sessionExpiry uint32, opts ...ConnectOption) packets.Packet {
	t.Helper()
	c.SendConnect(clientID, clean, sessionExpiry, opts...)
	ack := c.Expect(t, packets.Connack)
	if ack.ReasonCode != 0 {
		t.Fatalf("CONNACK for %q: reason 0x%02X, want 0x00", clientID, ack.ReasonCode)
	}
	return ack
}

// PublishPacket builds a PUBLISH; see rawpacket.Publish.
func PublishPacket(topic string, qos byte, id uint16, payload []byte, dup bool) packets.Packet {
	return rawpacket.Publish(topic, qos, id, payload, dup)
}

// Publish writes a PUBLISH.
func (c *Client) Publish(topic string, qos byte, id uint16, payload []byte, dup bool) {
	c.t.Helper()
	c.Send(PublishPacket(topic, qos, id, payload, dup))
}

// PublishRetained writes a PUBLISH with the retain flag.
func (c *Client) PublishRetained(topic string, qos byte, id uint16, payload []byte) {
	c.t.Helper()
	pk := PublishPacket(topic, qos, id, payload, false)
	pk.FixedHeader.Retain = true
	c.Send(pk)
}

// AckPacket builds a PUBACK, PUBREC, PUBREL (fixed header 0x62) or PUBCOMP; see rawpacket.Ack.
func AckPacket(typ byte, id uint16, reason byte) packets.Packet {
	return rawpacket.Ack(typ, id, reason)
}

// Puback writes a PUBACK.
func (c *Client) Puback(id uint16) { c.t.Helper(); c.Send(AckPacket(packets.Puback, id, 0)) }

// Pubrec writes a successful PUBREC.
func (c *Client) Pubrec(id uint16) { c.t.Helper(); c.Send(AckPacket(packets.Pubrec, id, 0)) }

// PubrecCode writes a PUBREC with a reason code (5.0).
func (c *Client) PubrecCode(id uint16, reason byte) {
	c.t.Helper()
	c.Send(AckPacket(packets.Pubrec, id, reason))
}

// Pubrel writes a PUBREL.
func (c *Client) Pubrel(id uint16) { c.t.Helper(); c.Send(AckPacket(packets.Pubrel, id, 0)) }

// Pubcomp writes a PUBCOMP.
func (c *Client) Pubcomp(id uint16) { c.t.Helper(); c.Send(AckPacket(packets.Pubcomp, id, 0)) }

// Pingreq writes a PINGREQ.
func (c *Client) Pingreq() {
	c.t.Helper()
	c.Send(rawpacket.Pingreq())
}

// SubscribePacket builds a SUBSCRIBE for one filter; see rawpacket.Subscribe.
func SubscribePacket(id uint16, filter string, qos byte) packets.Packet {
	return rawpacket.Subscribe(id, filter, qos)
}

// Subscribe writes a SUBSCRIBE for one filter.
func (c *Client) Subscribe(id uint16, filter string, qos byte) {
	c.t.Helper()
	c.Send(SubscribePacket(id, filter, qos))
}

// SubscribeOK subscribes to filter and expects a SUBACK granting qos.
func (c *Client) SubscribeOK(t testing.TB, id uint16, filter string, qos byte) {
	t.Helper()
	c.Subscribe(id, filter, qos)
	ack := c.ExpectID(t, packets.Suback, id)
	if len(ack.ReasonCodes) != 1 || ack.ReasonCodes[0] != qos {
		t.Fatalf("SUBACK for %q: codes % x, want granted QoS %d", filter, ack.ReasonCodes, qos)
	}
}

// Disconnect writes a DISCONNECT (5.0 reason 0x00) and waits until the broker closes the
// connection, which it does once it has taken the session offline.
func (c *Client) Disconnect(t testing.TB) {
	t.Helper()
	c.Send(rawpacket.Disconnect(0))
	c.ExpectClosed(t)
	c.Close()
}

// Drop ends the connection without DISCONNECT (an abnormal end for the broker: the will is
// published) and waits for the broker to close its side. Packets still in flight are discarded.
func (c *Client) Drop(t testing.TB) {
	t.Helper()
	if tc, ok := c.conn.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
		c.Drain(t)
	}
	c.Close()
}

// Next waits up to timeout for the next packet or the end of the connection. ok is false on
// timeout.
func (c *Client) Next(timeout time.Duration) (r Received, ok bool) {
	if c.closedErr != nil {
		return Received{Err: c.closedErr}, true
	}
	select {
	case r = <-c.recv: // what has arrived already, even with a zero timeout
	default:
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		select {
		case r = <-c.recv:
		case <-timer.C:
			return r, false
		}
	}
	if r.Err != nil {
		c.closedErr = r.Err
	} else {
		c.last = r
	}
	return r, true
}

// Expect waits up to ExpectTimeout for the next packet and fails t unless it has type typ.
func (c *Client) Expect(t testing.TB, typ byte) packets.Packet {
	t.Helper()
	r, ok := c.Next(ExpectTimeout)
	switch {
	case !ok:
		t.Fatalf("expected %s, got nothing in %v", name(typ), ExpectTimeout)
	case r.Err != nil:
		t.Fatalf("expected %s, connection ended: %v", name(typ), r.Err)
	case r.Packet.FixedHeader.Type != typ:
		t.Fatalf("expected %s, got %s", name(typ), Describe(r.Packet))
	}
	return r.Packet
}

// ExpectID is Expect that also checks the packet identifier.
func (c *Client) ExpectID(t testing.TB, typ byte, id uint16) packets.Packet {
	t.Helper()
	pk := c.Expect(t, typ)
	if pk.PacketID != id {
		t.Fatalf("expected %s id %d, got %s", name(typ), id, Describe(pk))
	}
	return pk
}

// ExpectAck expects a PUBACK, PUBREC, PUBREL or PUBCOMP with id and, in 5.0, reason code reason.
// In 3.1.1 it checks that the packet is exactly 4 bytes: no reason code exists there.
func (c *Client) ExpectAck(t testing.TB, typ byte, id uint16, reason byte) packets.Packet {
	t.Helper()
	pk := c.ExpectID(t, typ, id)
	switch {
	case c.Version == 5 && pk.ReasonCode != reason:
		t.Fatalf("expected %s id %d reason 0x%02X, got %s", name(typ), id, reason, Describe(pk))
	case c.Version == 4 && len(c.last.Raw) != 4:
		t.Fatalf("expected a 4-byte 3.1.1 %s, got % x", name(typ), c.last.Raw)
	}
	return pk
}

// ExpectPublish expects a PUBLISH of payload on topic at qos, and returns it.
func (c *Client) ExpectPublish(t testing.TB, topic string, qos byte, payload string) packets.Packet {
	t.Helper()
	pk := c.Expect(t, packets.Publish)
	if pk.TopicName != topic || pk.FixedHeader.Qos != qos || string(pk.Payload) != payload {
		t.Fatalf("expected PUBLISH(topic=%q qos=%d payload=%q), got %s", topic, qos, payload, Describe(pk))
	}
	return pk
}

// LastRaw is the raw bytes of the last packet returned by Next or an Expect helper.
func (c *Client) LastRaw() []byte { return c.last.Raw }

// Ping sends PINGREQ and expects PINGRESP: the connection is alive and being served.
func (c *Client) Ping(t testing.TB) {
	t.Helper()
	c.Pingreq()
	c.Expect(t, packets.Pingresp)
}

// ExpectNothing fails t if a packet arrives, or the connection ends, within d. With d == 0 it checks
// what has arrived so far, for a test that waited once for several clients.
func (c *Client) ExpectNothing(t testing.TB, d time.Duration) {
	t.Helper()
	r, ok := c.Next(d)
	switch {
	case !ok:
	case r.Err != nil:
		t.Fatalf("expected nothing for %v, connection ended: %v", d, r.Err)
	default:
		t.Fatalf("expected nothing for %v, got %s", d, Describe(r.Packet))
	}
}

// ExpectClosed fails t unless the broker closes the connection within ExpectTimeout without
// sending anything more.
func (c *Client) ExpectClosed(t testing.TB) {
	t.Helper()
	r, ok := c.Next(ExpectTimeout)
	switch {
	case !ok:
		t.Fatalf("expected the connection to close, still open after %v", ExpectTimeout)
	case r.Err == nil:
		t.Fatalf("expected the connection to close, got %s", Describe(r.Packet))
	case !isClosed(r.Err):
		t.Fatalf("expected the connection to close, got %v", r.Err)
	}
}

// ExpectDisconnect expects the broker to end the connection for an error: in 5.0 with DISCONNECT
// and one of the reason codes given, in 3.1.1 by closing it without a word [MQTT-4.13.1-1].
func (c *Client) ExpectDisconnect(t testing.TB, reasons ...byte) {
	t.Helper()
	if c.Version == 5 {
		pk := c.Expect(t, packets.Disconnect)
		if !bytes.Contains(reasons, []byte{pk.ReasonCode}) {
			t.Fatalf("expected DISCONNECT with reason % x, got 0x%02X", reasons, pk.ReasonCode)
		}
	}
	c.ExpectClosed(t)
}

// Drain waits up to ExpectTimeout for the connection to end and returns the packets received until
// then.
func (c *Client) Drain(t testing.TB) []packets.Packet {
	t.Helper()
	var got []packets.Packet
	deadline := time.Now().Add(ExpectTimeout)
	for {
		r, ok := c.Next(time.Until(deadline))
		switch {
		case !ok:
			t.Fatalf("expected the connection to close, still open after %v (received %s)", ExpectTimeout, DescribeAll(got))
		case r.Err != nil:
			return got
		}
		got = append(got, r.Packet)
	}
}

// isClosed reports whether err is how a closed connection shows up: EOF, or a reset when the
// broker closed with unread data in its buffer.
func isClosed(err error) bool {
	var ne *net.OpError
	return errors.Is(err, io.EOF) || errors.As(err, &ne)
}

func name(typ byte) string { return strings.ToUpper(packets.PacketNames[typ]) }

// Describe formats a packet for test failures; see rawpacket.Describe.
func Describe(pk packets.Packet) string { return rawpacket.Describe(pk) }

// DescribeAll formats packets for test failures.
func DescribeAll(pks []packets.Packet) string { return rawpacket.DescribeAll(pks) }
