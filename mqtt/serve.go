package mqtt

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/oncemq/oncemq/session/reason"
)

// connEnd is how a connection ended, decided by the reader and acted on by serve's cleanup.
type connEnd struct {
	publishWill  bool        // an abnormal end publishes the will [MQTT-3.1.2-8]
	newExpiry    *uint32     // Session Expiry Interval from the client's DISCONNECT
	closeReason  reason.Code // DISCONNECT reason for 5.0 when the broker ends the connection
	byClient     bool        // the client sent DISCONNECT
	clientReason reason.Code // the reason code of the client's DISCONNECT
	err          error       // what ended it otherwise
}

// serve runs the connection's reader: CONNECT, then one packet at a time until the connection ends.
// A panic here closes this connection only [net/http conn.serve does the same].
func (c *conn) serve() {
	end := connEnd{publishWill: true}
	defer func() {
		if r := recover(); r != nil {
			c.log().Error("panic in connection; closing it", slog.Any("panic", r), slog.String("stack", string(debug.Stack())))
			end.closeReason = reason.UnspecifiedError
		}
		// The session learns that the connection ended before the socket is closed: a client that
		// sees the close and reconnects at once must find the session already offline (or ended,
		// with Session Expiry 0), not take over a connection that is gone [MQTT-4.1.0-2].
		close(c.readerDone) // the writer may drain the socket (see linger)
		if c.sess != nil && !c.srv.shuttingDown.Load() {
			c.eng.broker.Disconnected(c.sess, c, end.publishWill, end.newExpiry)
		}
		c.Close(end.closeReason)
		<-c.writerDone
		c.releaseReader()
		if c.sess != nil {
			c.disconnectEvent(end)
		}
	}()

	if err := c.connectOnFreshStack(); err != nil {
		c.logEnd(err)
		if c.version == 5 && c.sess == nil && reasonOf(err) >= reason.UnspecifiedError && !errors.Is(err, errConnectRefused) {
			var pe *protocolError
			if errors.As(err, &pe) || isCodecError(err) {
				// A malformed CONNECT from a 5.0 client: CONNACK with the reason [MQTT-3.1.4-1].
				c.refuseConnect(reasonOf(err), err)
			}
		}
		return
	}
	c.readLoop(&end)
}

// readLoop reads and handles packets until the connection ends. Its frame is small on purpose:
// an idle connection waits in awaitPacket on a small stack, and the deep work of handling a packet
// happens in nextPacket, which has returned by the time the connection is idle again.
func (c *conn) readLoop(end *connEnd) {
	c.inLoop = true
	for {
		if c.isClosing() {
			return // the broker closes the connection: nothing more is handled (see linger)
		}
		err := c.awaitPacket()
		if err == nil {
			err = c.nextPacket(end)
		}
		if errors.Is(err, errDisconnect) {
			return
		}
		if err != nil && c.isClosing() {
			return // woken by linger, or the socket closed under it
		}
		if err != nil {
			c.logEnd(err)
			end.err = err
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				end.closeReason = reason.KeepAliveTimeout // [MQTT-3.1.2-22]
			case isNetworkEnd(err):
			default:
				end.closeReason = reasonOf(err) // [MQTT-4.13.1-1]
			}
			return
		}
	}
}

// awaitPacket waits until the next packet starts, within the keep alive [MQTT-3.1.2-22]. While it
// waits the connection holds no read buffer: it reads the first bytes that come into c.pre.
func (c *conn) awaitPacket() error {
	if c.held != nil || c.br != nil && c.br.Buffered() > 0 {
		return nil
	}
	c.releaseReader()
	var end time.Time
	if c.keepAlive > 0 {
		end = time.Now().Add(c.keepAlive)
	}
	c.armRead(end, c.keepAlive)
	for {
		n, err := c.readSocket(c.pre[:], end)
		if n > 0 {
			c.preOff, c.preN = 0, uint8(n)
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// nextPacket reads the packet awaitPacket saw start, and handles it.
//
//go:noinline
func (c *conn) nextPacket(end *connEnd) error {
	var pk packets.Packet
	var err error
	if h := c.held; h != nil {
		c.held = nil
		pk, err = h.pk, h.err
	} else {
		pk, err = c.readPacket()
	}
	if err == nil {
		err = c.handle(&pk)
	}
	if errors.Is(err, errDisconnect) {
		end.byClient, end.clientReason = true, reason.Code(pk.ReasonCode)
		end.publishWill = end.clientReason == reason.DisconnectWithWill
		if pk.Properties.SessionExpiryIntervalFlag {
			v := c.capExpiry(pk.Properties.SessionExpiryInterval)
			end.newExpiry = &v
		}
	}
	return err
}

// connectOnFreshStack runs the CONNECT handling on a goroutine of its own and waits for it. CONNECT
// is the deepest path a connection takes (decode, session takeover, resend); run on the reader's
// goroutine it would leave that stack grown to 16 KiB for as long as the connection then sits idle,
// which for a device is most of its life.
func (c *conn) connectOnFreshStack() error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				c.log().Error("panic in CONNECT; closing the connection", slog.Any("panic", r), slog.String("stack", string(debug.Stack())))
				done <- &protocolError{code: reason.UnspecifiedError, msg: "internal error"}
			}
		}()
		done <- c.handleConnect()
	}()
	return <-done
}

func isNetworkEnd(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, os.ErrDeadlineExceeded)
}

func isCodecError(err error) bool {
	var code packets.Code
	return errors.As(err, &code)
}

func (c *conn) logEnd(err error) {
	if isNetworkEnd(err) || errors.Is(err, errConnectRefused) { // a refusal has its own line
		c.log().Debug("connection ended", slog.Any("err", err))
		return
	}
	c.log().Info("closing connection", slog.Any("err", err))
}

// disconnectEvent logs how an accepted connection ended and tells the Disconnect event. The reason
// a broker-side close gives is the first one the connection was closed with (takeover, an operator,
// shutdown, a protocol error), which may not be the reader's own.
func (c *conn) disconnectEvent(end connEnd) {
	d := Disconnect{ByClient: end.byClient, Reason: end.closeReason, Err: end.err, Duration: time.Since(c.acceptedAt)}
	c.mu.Lock()
	closed := c.closeReason
	c.mu.Unlock()
	by := closedByNetwork
	switch {
	case end.byClient:
		d.Reason, by = end.clientReason, closedByClient
	case closed != 0:
		d.Reason, by = closed, closedByBroker
	}
	c.logDisconnect(d, by)
	if ev := c.srv.opts.Events.Disconnect; ev != nil {
		ev(c.client(), d)
	}
}
