package mqtt

import (
	"fmt"
	"log/slog"
	"time"
)

// The connection log: one info line when a client connects, one when it leaves, one when its
// CONNECT is refused, so that an operator can follow who came and went without a debug log. The
// lines carry the same facts as the Connect, Disconnect and ConnectRefused events, from the same
// values.

// Who ended a connection, in the disconnect line.
const (
	closedByClient  = "client"  // the client sent DISCONNECT
	closedByBroker  = "broker"  // the broker closed it: a protocol error, keep alive, takeover, shutdown, an operator
	closedByNetwork = "network" // the socket ended without DISCONNECT
)

// logConnect writes the line of an accepted CONNECT.
func (c *conn) logConnect(sessionPresent bool) {
	cl := c.info
	c.srv.log.Info("client connected",
		slog.String("client", cl.ID), slog.String("username", cl.Username),
		slog.String("remote", addrString(cl.RemoteAddr)), slog.String("listener", addrString(cl.Listener)),
		slog.String("protocol", protocolName(cl.ProtocolVersion)), slog.Bool("clean_start", c.cleanStart),
		slog.Int("keep_alive", int(c.keepAliveSecs)), slog.Bool("session_present", sessionPresent))
}

// logDisconnect writes the line of an accepted connection's end.
func (c *conn) logDisconnect(d Disconnect, by string) {
	attrs := []any{
		slog.String("client", c.info.ID), slog.String("remote", addrString(c.info.RemoteAddr)),
		slog.String("reason_code", fmt.Sprintf("0x%02X", byte(d.Reason))), slog.String("reason", disconnectReason(d.Reason)),
		slog.String("closed_by", by), slog.Duration("duration", d.Duration.Round(time.Millisecond)),
	}
	if d.Err != nil && by != closedByNetwork {
		attrs = append(attrs, slog.Any("err", d.Err))
	}
	c.srv.log.Info("client disconnected", attrs...)
}

// logRefused writes the line of a refused CONNECT.
func (c *conn) logRefused(code ReasonCode, err error) {
	attrs := []any{
		slog.String("client", c.clientID), slog.String("remote", addrString(c.nc.RemoteAddr())),
		slog.String("listener", addrString(c.listener)), slog.String("protocol", protocolName(c.version)),
		slog.String("reason_code", fmt.Sprintf("0x%02X", byte(code))), slog.String("reason", code.String()),
	}
	if err != nil {
		attrs = append(attrs, slog.Any("err", err))
	}
	c.srv.log.Info("connect refused", attrs...)
}

// disconnectReason names a DISCONNECT reason code; 0x00 is "Normal disconnection" there.
func disconnectReason(code ReasonCode) string {
	if code == 0 {
		return "Normal disconnection"
	}
	return code.String()
}

func protocolName(v byte) string {
	switch v {
	case 4:
		return "3.1.1"
	case 5:
		return "5.0"
	}
	return fmt.Sprintf("level %d", v)
}

func addrString(a interface{ String() string }) string {
	if a == nil {
		return ""
	}
	return a.String()
}
