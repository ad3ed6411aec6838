package mqtt

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"time"
)

// prefixSize is how much an idle connection reads from its socket while it holds no read buffer:
// enough for a small PUBLISH and an acknowledgement, so that the burst of a busy client usually
// costs one read syscall rather than a 1-byte read and then a buffered one.
const prefixSize = 64

// The read deadline of a connection is set only when the one in force would end too late, or
// much too early: setting it is a timer change in the runtime, and doing it twice per packet
// showed in profiles. A deadline that fires early is not an end: readSocket sees that the
// real one has not passed and waits again up to it, so the keep alive [MQTT-3.1.2-22] and
// Options.PacketTimeout are kept to the time. That needs a connection that can be read again after
// a deadline: TCP and TLS can; a WebSocket connection (gorilla) fails every read after one, so
// any other kind of connection gets the exact deadline every time (see coarseDeadlines).

// socketReader is the source of a connection's read buffer: first the bytes awaitPacket read
// without a buffer, then the socket, within the packet's deadline.
type socketReader conn

func (r *socketReader) Read(p []byte) (int, error) {
	c := (*conn)(r)
	if c.preOff < c.preN {
		n := copy(p, c.pre[c.preOff:c.preN])
		c.preOff += uint8(n)
		return n, nil
	}
	if !c.inLoop {
		return c.nc.Read(p) // CONNECT: handleConnect set the deadline
	}
	// The rest of a packet must come within PacketTimeout, or the keep alive if shorter.
	bound := c.srv.opts.PacketTimeout
	if c.keepAlive > 0 && c.keepAlive < bound {
		bound = c.keepAlive
	}
	if !c.packetArmed {
		c.packetArmed = true
		c.packetEnd = time.Now().Add(bound)
	}
	c.armRead(c.packetEnd, bound)
	return c.readSocket(p, c.packetEnd)
}

// armRead sets the read deadline to end (zero: none) unless the one in force ends within span/4
// before it. Reader goroutine only.
func (c *conn) armRead(end time.Time, span time.Duration) {
	if c.deadlineKnown && c.coarse {
		if end.IsZero() && c.deadline.IsZero() {
			return
		}
		if !end.IsZero() && !c.deadline.IsZero() && !c.deadline.After(end) && c.deadline.After(end.Add(-span/4)) {
			return
		}
	}
	c.setReadDeadline(end)
}

// setReadDeadline sets the read deadline and remembers it for armRead.
func (c *conn) setReadDeadline(t time.Time) {
	_ = c.nc.SetReadDeadline(t)
	c.deadline, c.deadlineKnown = t, true
}

// readSocket reads from the socket until end (zero: no end). A deadline that fires before end,
// because armRead kept an earlier one, is moved to end and the read goes on; one that fires while
// the connection is closing ends the read (linger wakes the reader that way).
func (c *conn) readSocket(p []byte, end time.Time) (int, error) {
	for {
		n, err := c.nc.Read(p)
		if n > 0 || err == nil || !isTimeout(err) || end.IsZero() || !time.Now().Before(end) || c.isClosing() {
			return n, err
		}
		c.setReadDeadline(end)
	}
}

// coarseDeadlines reports whether nc can be read again after its read deadline fired: a TCP or
// Unix socket, or TLS over one.
func coarseDeadlines(nc net.Conn) bool {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	switch nc.(type) {
	case *net.TCPConn, *net.UnixConn:
		return true
	}
	return false
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
