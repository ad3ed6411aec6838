package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/paho"
)

// clientConn is the net.Conn given to paho. It makes the client cheap so that the broker, not the
// client, is what is measured:
//
//   - reads go through a bufio.Reader (paho's packets.ReadPacket reads the fixed header a byte at
//     a time, which on a bare socket is three or more syscalls per packet);
//   - it is a sync.Locker, which paho's ControlPacket.WriteTo takes around each packet, so the
//     packet's pieces are gathered between Lock and Unlock and written with one syscall, and
//     concurrent publishes never interleave.
//
// Every paho v0.23.0 write goes through ControlPacket.WriteTo, so no Write happens outside a
// Lock/Unlock pair. A write error is returned by the next Write; the reader sees the broken
// connection too.
type clientConn struct {
	net.Conn
	r *bufio.Reader

	mu  sync.Mutex
	buf []byte // the packet being gathered
	err error  // first write error
}

func newClientConn(nc net.Conn) *clientConn {
	return &clientConn{Conn: nc, r: bufio.NewReaderSize(nc, 64<<10)}
}

func (c *clientConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *clientConn) Lock() { c.mu.Lock() }

func (c *clientConn) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
}

func (c *clientConn) Unlock() {
	if len(c.buf) > 0 && c.err == nil {
		_, c.err = c.Conn.Write(c.buf)
	}
	if cap(c.buf) > 64<<10 {
		c.buf = nil // do not keep a large payload's buffer for ever
	}
	c.buf = c.buf[:0]
	c.mu.Unlock()
}

// clientOptions are the settings of one benchmark client.
type clientOptions struct {
	ID            string
	SessionExpiry uint32
	ReceiveMax    int           // announced Receive Maximum; 0: paho's default (65535)
	PacketTimeout time.Duration // how long paho waits for an acknowledgement
	OnPublish     func(paho.PublishReceived) (bool, error)
	OnError       func(error) // connection lost and the like
}

// connectClient dials addr and connects an MQTT 5 client with Clean Start 1, so that each run
// starts afresh while its sessions are still persistent (Session Expiry > 0) during the run, as
// durable clients' would be.
func connectClient(ctx context.Context, addr string, o clientOptions) (*paho.Client, error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("client %s: %w", o.ID, err)
	}
	cfg := paho.ClientConfig{
		ClientID:      o.ID,
		Conn:          newClientConn(nc),
		PacketTimeout: o.PacketTimeout,
		OnClientError: o.OnError,
	}
	if o.OnPublish != nil {
		cfg.OnPublishReceived = []func(paho.PublishReceived) (bool, error){o.OnPublish}
	}
	c := paho.NewClient(cfg)
	props := &paho.ConnectProperties{SessionExpiryInterval: &o.SessionExpiry}
	if o.ReceiveMax > 0 {
		rm := uint16(o.ReceiveMax)
		props.ReceiveMaximum = &rm
	}
	ca, err := c.Connect(ctx, &paho.Connect{ClientID: o.ID, CleanStart: true, KeepAlive: 60, Properties: props})
	if err != nil {
		if ca != nil {
			return nil, fmt.Errorf("client %s: CONNACK reason code 0x%02x: %w", o.ID, ca.ReasonCode, err)
		}
		return nil, fmt.Errorf("client %s: %w", o.ID, err) // Connect closed the connection
	}
	return c, nil
}

// disconnectClient ends a client's session (Session Expiry 0 in DISCONNECT, so nothing is left on
// the broker) and waits a little for the client to stop.
func disconnectClient(c *paho.Client) {
	var zero uint32
	_ = c.Disconnect(&paho.Disconnect{Properties: &paho.DisconnectProperties{SessionExpiryInterval: &zero}})
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
	}
}
