// Package mqttclient is a minimal MQTT 5.0 client transport for oncemq's own tools (torture): one
// TCP connection that encodes and decodes packets with rawpacket, the builders and framing it
// shares with the tests' raw client. It keeps no session state:
// the caller owns packet identifiers, acknowledgements and resends, so that a client's state can
// outlive its connections and be checked exactly.
package mqttclient

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt/mqtttest/rawpacket"
)

// Version is the protocol level spoken: MQTT 5.0.
const Version = 5

// MaxPacketSize bounds a packet read from the server, so that garbage cannot make us allocate
// gigabytes.
const MaxPacketSize = 16 << 20

// DefaultWriteTimeout bounds one write when Conn.WriteTimeout is zero.
const DefaultWriteTimeout = 10 * time.Second

// Conn is one connection to a broker. Write may be called from several goroutines; Read from one
// at a time.
type Conn struct {
	// WriteTimeout bounds each Write; zero means DefaultWriteTimeout.
	WriteTimeout time.Duration

	nc net.Conn
	br *bufio.Reader

	wmu  sync.Mutex // serialises writes
	wbuf bytes.Buffer
}

// Dial opens a TCP connection to addr within timeout. Nothing is sent.
func Dial(ctx context.Context, addr string, timeout time.Duration) (*Conn, error) {
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	return &Conn{nc: nc, br: bufio.NewReaderSize(nc, 32<<10)}, nil
}

// Close closes the socket at once, without DISCONNECT.
func (c *Conn) Close() error { return c.nc.Close() }

// LocalAddr is the client side's address, handy to tell connections apart in logs.
func (c *Conn) LocalAddr() string { return c.nc.LocalAddr().String() }

// Buffered is the number of bytes read from the socket and not yet returned by Read: more than 0
// means the next packet, or part of it, is already here.
func (c *Conn) Buffered() int { return c.br.Buffered() }

// SetReadDeadline bounds the pending and future Reads.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.nc.SetReadDeadline(t) }

// ConnectOptions are the fields of a CONNECT.
type ConnectOptions = rawpacket.ConnectOptions

// ConnackError is a CONNACK with a failure reason code.
type ConnackError struct{ Code byte }

func (e *ConnackError) Error() string { return fmt.Sprintf("CONNACK reason code 0x%02X", e.Code) }

// Connect sends CONNECT and waits up to timeout for the CONNACK, which it returns. A CONNACK with a
// failure reason code is returned with a *ConnackError. Packets that follow the CONNACK stay
// buffered for Read.
func (c *Conn) Connect(o ConnectOptions, timeout time.Duration) (packets.Packet, error) {
	pk := rawpacket.Connect(Version, o)
	if err := c.Write(pk); err != nil {
		return packets.Packet{}, err
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(timeout))
	defer c.nc.SetReadDeadline(time.Time{})
	ack, err := c.Read()
	if err != nil {
		return packets.Packet{}, err
	}
	if ack.FixedHeader.Type != packets.Connack {
		return ack, fmt.Errorf("expected CONNACK, got %s", Describe(ack))
	}
	if ack.ReasonCode >= 0x80 {
		return ack, &ConnackError{Code: ack.ReasonCode}
	}
	return ack, nil
}

// Write encodes pks and writes them with one system call.
func (c *Conn) Write(pks ...packets.Packet) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf.Reset()
	for _, pk := range pks {
		if err := Encode(&c.wbuf, pk); err != nil {
			return err
		}
	}
	timeout := c.WriteTimeout
	if timeout <= 0 {
		timeout = DefaultWriteTimeout
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(timeout))
	_, err := c.nc.Write(c.wbuf.Bytes())
	if c.wbuf.Cap() > 1<<20 {
		c.wbuf = bytes.Buffer{}
	}
	return err
}

// Read reads and decodes the next packet. Each packet has its own buffer, so the topic and payload
// it holds stay valid.
func (c *Conn) Read() (packets.Packet, error) {
	return ReadPacket(c.br)
}

// ErrMalformed is wrapped by Read's errors for bytes that are not a valid packet from a server.
var ErrMalformed = rawpacket.ErrMalformed

// ReadPacket reads one packet sent by a server from r.
func ReadPacket(r *bufio.Reader) (packets.Packet, error) {
	return rawpacket.ReadFromServer(r, Version, MaxPacketSize, nil)
}

// Encode appends pk, encoded for MQTT 5.0, to buf.
func Encode(buf *bytes.Buffer, pk packets.Packet) error { return rawpacket.Append(buf, pk, Version) }

// Publish builds a PUBLISH; see rawpacket.Publish.
func Publish(topic string, qos byte, id uint16, payload []byte, dup bool) packets.Packet {
	return rawpacket.Publish(topic, qos, id, payload, dup)
}

// Ack builds a PUBACK, PUBREC, PUBREL (fixed header 0x62) or PUBCOMP with a reason code.
func Ack(typ byte, id uint16, reason byte) packets.Packet { return rawpacket.Ack(typ, id, reason) }

// Subscribe builds a SUBSCRIBE (fixed header 0x82) for one filter.
func Subscribe(id uint16, filter string, qos byte) packets.Packet {
	return rawpacket.Subscribe(id, filter, qos)
}

// Disconnect builds a DISCONNECT with a reason code.
func Disconnect(reason byte) packets.Packet { return rawpacket.Disconnect(reason) }

// Describe is a one-line summary of pk for messages.
func Describe(pk packets.Packet) string { return rawpacket.Describe(pk) }
