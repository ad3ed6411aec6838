package websocket

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	gws "github.com/gorilla/websocket"
)

// closeGrace bounds the wait to send the close frame when a connection is closed.
const closeGrace = time.Second

// ErrTextFrame is the read error of a connection whose peer sent a text message: MQTT travels in
// binary messages only, and the connection is closed [MQTT-6.0.0-1].
var ErrTextFrame = errors.New("websocket: text message received; MQTT needs binary messages")

// conn is a WebSocket connection seen as a byte stream: Read returns the payloads of the binary
// messages one after the other, whatever their boundaries, since a message may hold several MQTT
// packets or part of one [MQTT-6.0.0-2]; each Write sends one binary message [MQTT-6.0.0-1].
//
// A client library may write one packet in several Writes (paho.golang writes the fixed header,
// then each piece of the body), from more than one goroutine (its pinger beside the application).
// On TCP such a packet goes out in one writev; here each Write is a message of its own, so the
// pieces of two packets could interleave in the stream. conn is therefore a sync.Locker: paho
// holds Lock around the Writes of one packet, which keeps every packet whole in the stream.
type conn struct {
	ws *gws.Conn
	r  io.Reader // the message being read; nil between messages. Reader only.

	pmu sync.Mutex // held by a writer across the Writes of one packet (Lock, Unlock)
	wmu sync.Mutex // one writer at a time, as gorilla/websocket requires

	closeOnce sync.Once
	closeErr  error
}

// tlsConn is a conn that arrived over TLS; ConnectionState is what package mqtt looks for to give
// the hooks the client's certificate.
type tlsConn struct {
	*conn
	state tls.ConnectionState
}

// ConnectionState is the TLS state of the connection, with the client's certificates.
func (c *tlsConn) ConnectionState() tls.ConnectionState { return c.state }

// NewConn makes a net.Conn of an established WebSocket connection, on the server's side or the
// client's; state is its TLS state, nil without TLS. The result has a ConnectionState method when
// state is not nil.
func NewConn(ws *gws.Conn, state *tls.ConnectionState) net.Conn {
	c := &conn{ws: ws}
	if state != nil {
		return &tlsConn{conn: c, state: *state}
	}
	return c
}

func (c *conn) Read(p []byte) (int, error) {
	for {
		if c.r == nil {
			typ, r, err := c.ws.NextReader()
			if err != nil {
				return 0, readError(err)
			}
			if typ != gws.BinaryMessage {
				c.closeWith(gws.CloseUnsupportedData)
				return 0, ErrTextFrame
			}
			c.r = r
		}
		n, err := c.r.Read(p)
		if err == io.EOF {
			c.r = nil
			err = nil
			if n == 0 {
				continue
			}
		}
		if err != nil {
			return n, readError(err)
		}
		return n, nil
	}
}

// readError turns the peer's close frame into io.EOF, the end of the stream as package mqtt knows
// it from TCP; other errors (deadlines, resets) are returned as they are.
func readError(err error) error {
	var ce *gws.CloseError
	if errors.As(err, &ce) {
		return io.EOF
	}
	return err
}

// Lock reserves the connection's writing for one packet written in several Writes; other Lock
// callers wait until Unlock. Write does not take it: a packet written in one Write needs no Lock.
// paho.golang's ControlPacket.WriteTo calls it on a connection that is a sync.Locker.
func (c *conn) Lock() { c.pmu.Lock() }

// Unlock ends what Lock began.
func (c *conn) Unlock() { c.pmu.Unlock() }

func (c *conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.ws.WriteMessage(gws.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close sends a close frame, waiting at most closeGrace, and closes the connection.
func (c *conn) Close() error { return c.closeWith(gws.CloseNormalClosure) }

// closeWith is Close with the close frame's status code.
func (c *conn) closeWith(code int) error {
	c.closeOnce.Do(func() {
		msg := gws.FormatCloseMessage(code, "")
		_ = c.ws.WriteControl(gws.CloseMessage, msg, time.Now().Add(closeGrace))
		c.closeErr = c.ws.Close()
	})
	return c.closeErr
}

func (c *conn) LocalAddr() net.Addr  { return c.ws.LocalAddr() }
func (c *conn) RemoteAddr() net.Addr { return c.ws.RemoteAddr() }

func (c *conn) SetDeadline(t time.Time) error {
	if err := c.ws.SetReadDeadline(t); err != nil {
		return err
	}
	return c.ws.SetWriteDeadline(t)
}

func (c *conn) SetReadDeadline(t time.Time) error  { return c.ws.SetReadDeadline(t) }
func (c *conn) SetWriteDeadline(t time.Time) error { return c.ws.SetWriteDeadline(t) }
