package mqtt

import (
	"errors"

	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/oncemq/oncemq/session"
	"github.com/oncemq/oncemq/session/reason"
)

// errDisconnect: the client sent a valid DISCONNECT.
var errDisconnect = errors.New("client disconnected")

// handle dispatches one packet received after CONNECT to its handler: handle<Packet>.
func (c *conn) handle(pk *packets.Packet) error {
	switch pk.FixedHeader.Type {
	case packets.Publish:
		return c.handlePublish(pk)
	case packets.Puback:
		c.handlePuback(pk)
	case packets.Pubrec:
		return c.handlePubrec(pk)
	case packets.Pubrel:
		c.handlePubrel(pk)
	case packets.Pubcomp:
		c.handlePubcomp(pk)
	case packets.Subscribe:
		return c.handleSubscribe(pk)
	case packets.Unsubscribe:
		return c.handleUnsubscribe(pk)
	case packets.Pingreq:
		c.handlePingreq()
	case packets.Disconnect:
		return c.handleDisconnect(pk)
	case packets.Connect:
		return protocolViolation("second CONNECT") // [MQTT-3.1.0-2]
	case packets.Auth:
		return c.handleAuth()
	}
	return nil
}

// handlePingreq answers PINGREQ with PINGRESP [MQTT-3.12.4-1].
func (c *conn) handlePingreq() {
	c.Send(session.PacketOf(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingresp}}))
}

// handleDisconnect ends the connection as the client asked. A 5.0 client may not turn a session
// that ends with its connection into one that outlives it [MQTT-3.14.2-2].
func (c *conn) handleDisconnect(pk *packets.Packet) error {
	if c.version == 5 && pk.Properties.SessionExpiryIntervalFlag && pk.Properties.SessionExpiryInterval > 0 &&
		c.eng.broker.SessionExpiry(c.sess) == 0 {
		return protocolViolation("DISCONNECT sets a Session Expiry Interval after CONNECT set 0")
	}
	return errDisconnect
}

// handleAuth refuses AUTH: oncemq offers no enhanced authentication method, so a client that did
// not negotiate one may not send AUTH.
func (c *conn) handleAuth() error {
	return &protocolError{code: reason.ProtocolError, msg: "AUTH without an authentication method"}
}
