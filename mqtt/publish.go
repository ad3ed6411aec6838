package mqtt

import (
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session"
	"github.com/oncemq/oncemq/session/reason"
	"github.com/oncemq/oncemq/session/topic"
)

// topicAliasMaximum is the number of inbound topic aliases a 5.0 client may use.
const topicAliasMaximum = 64

// handlePublish validates a PUBLISH, resolves its topic alias and hands the message to the broker.
func (c *conn) handlePublish(pk *packets.Packet) error {
	aliasMax := uint16(0)
	if c.version == 5 {
		aliasMax = topicAliasMaximum
	}
	if strings.ContainsAny(pk.TopicName, "+#") {
		// Wildcards in the name [MQTT-3.3.2-2]: 0x90 says what is wrong, where the codec's
		// PublishValidate answers 0x82.
		return &protocolError{code: reason.TopicNameInvalid, msg: "invalid PUBLISH: wildcard in the topic name"}
	}
	if code := pk.PublishValidate(aliasMax); code != packets.CodeSuccess {
		// id 0 on QoS > 0 [MQTT-2.2.1-3], alias out of range [MQTT-3.3.2-9]: protocol errors that
		// close the connection.
		return &protocolError{code: reason.Code(code.Code), msg: "invalid PUBLISH: " + code.Reason}
	}
	name := pk.TopicName
	if alias := pk.Properties.TopicAlias; alias > 0 {
		if c.aliases == nil {
			c.aliases = make(map[uint16]string)
		}
		if name != "" {
			c.aliases[alias] = name
		} else if name = c.aliases[alias]; name == "" {
			return protocolViolation("unknown topic alias") // [MQTT-3.3.2-12]
		}
	}
	if !topic.ValidName(name) {
		return &protocolError{code: reason.TopicNameInvalid, msg: "invalid topic name"}
	}
	if c.version == 5 && pk.Properties.PayloadFormatFlag && pk.Properties.PayloadFormat > 1 {
		return protocolViolation("payload format indicator > 1")
	}

	c.srv.traffic.publishReceived(pk.FixedHeader.Qos, len(pk.Payload))
	props := pk.Properties
	props.TopicAlias, props.TopicAliasFlag = 0, false
	now := time.Now().UnixNano()
	m := &inflight.Message{
		Topic:      name,
		Payload:    pk.Payload, // the packet's own buffer, never reused
		QoS:        pk.FixedHeader.Qos,
		Retain:     pk.FixedHeader.Retain,
		Properties: props,
		Created:    now,
	}
	if props.MessageExpiryInterval > 0 {
		m.ExpiresAt = now + int64(props.MessageExpiryInterval)*int64(time.Second)
	}

	if isSys(name) {
		return c.refusePublish(pk, reason.NotAuthorized) // $SYS is the broker's own
	}
	if az := c.srv.opts.Authorizer; az != nil && !az.CanPublish(c.client(), name) {
		return c.refusePublish(pk, reason.NotAuthorized)
	}

	// The quota counts the QoS 1 PUBACKs still owed, and the session adds the QoS 2 ids awaiting
	// PUBREL, the way the client counts [MQTT-3.3.4-8]. The count goes up before the PUBACK can
	// be sent (Send takes it down again).
	//
	// 3.1.1 has no Receive Maximum: its client may use the whole packet-identifier space. The
	// inbound table holds ids and codes only, a few bytes each, so 65,535 of them stay small.
	limit := c.srv.opts.ReceiveMaximum
	if c.version == 4 {
		limit = 65535
	}
	quota := limit - int(c.qos1Pending.Load())
	if m.QoS == 1 {
		c.qos1Pending.Add(1)
	}
	err := c.eng.broker.Publish(c.sess, c, m, pk.PacketID, quota)
	if errors.Is(err, session.ErrReceiveMaximumExceeded) {
		return &protocolError{code: reason.ReceiveMaximumExceeded, msg: "receive maximum exceeded"}
	}
	return err
}

// refusePublish answers a PUBLISH that is not routed: a 5.0 client gets PUBACK or PUBREC with code
// and keeps its id free (§4.3.3); a 3.1.1 client, which has no refusal, gets the usual
// acknowledgement for Not authorized and is disconnected for anything else (session.Refuse). A
// QoS 0 PUBLISH is dropped without a word. Every refusal is counted.
func (c *conn) refusePublish(pk *packets.Packet, code reason.Code) error {
	c.log().Debug("publish refused", slog.String("topic", pk.TopicName), slog.String("reason", code.String()))
	c.eng.broker.Refuse(c.sess, c, pk.FixedHeader.Qos, pk.PacketID, code)
	return nil
}
