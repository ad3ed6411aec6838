package mqtt

import (
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/oncemq/oncemq/session/reason"
)

// handlePuback completes a QoS 1 delivery to this client: its outbound id is freed.
func (c *conn) handlePuback(pk *packets.Packet) {
	c.eng.broker.Puback(c.sess, c, pk.PacketID)
}

// handlePubrec is the client's answer to a QoS 2 delivery: below 0x80 the broker moves the id to
// "PUBREL sent" and sends PUBREL after that commit; 0x80 and above frees the id.
func (c *conn) handlePubrec(pk *packets.Packet) error {
	if c.version == 5 && !validPubrecReason(pk.ReasonCode) {
		return protocolViolation("PUBREC with an invalid reason code")
	}
	c.eng.broker.Pubrec(c.sess, c, pk.PacketID, reason.Code(pk.ReasonCode))
	return nil
}

// handlePubrel releases an inbound QoS 2 id; PUBCOMP follows its commit [MQTT-4.3.3-11].
func (c *conn) handlePubrel(pk *packets.Packet) {
	c.eng.broker.Pubrel(c.sess, c, pk.PacketID)
}

// handlePubcomp completes a QoS 2 delivery to this client: its outbound id is freed.
func (c *conn) handlePubcomp(pk *packets.Packet) {
	c.eng.broker.Pubcomp(c.sess, c, pk.PacketID)
}

// validPubrecReason reports whether code is one a PUBREC may carry (MQTT 5.0 section 3.5.2.1).
func validPubrecReason(code byte) bool {
	switch reason.Code(code) {
	case reason.Success, reason.NoMatchingSubscribers, reason.UnspecifiedError,
		reason.ImplementationSpecificError, reason.NotAuthorized, reason.TopicNameInvalid,
		reason.PacketIdentifierInUse, reason.QuotaExceeded, reason.PayloadFormatInvalid:
		return true
	}
	return false
}
