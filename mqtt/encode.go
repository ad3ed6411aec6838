package mqtt

import (
	"bytes"
	"log/slog"

	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/oncemq/oncemq/mqtt/internal/wire"
	"github.com/oncemq/oncemq/session"
)

// encode appends o to buf in the client's protocol version. Acknowledgements and PUBLISHes whose
// properties are only those a broker adds (expiry, subscription ids, alias) and a payload format
// are written straight from their descriptions; anything else is built and goes through the codec.
func (c *conn) encode(buf *bytes.Buffer, o *session.Outgoing) {
	switch o.Type {
	case packets.Puback, packets.Pubrec, packets.Pubrel, packets.Pubcomp:
		wire.EncodeAck(buf, o.Type, o.ID, byte(o.Code), c.version)
		return
	case packets.Publish:
		if plainProperties(&o.Msg.Properties) {
			c.encodePublish(buf, o)
			return
		}
	}
	pk := o.Packet()
	c.encodePacket(buf, &pk)
}

// plainProperties reports whether a message carries no property that EncodePublish cannot write.
func plainProperties(p *packets.Properties) bool {
	return p.ContentType == "" && p.ResponseTopic == "" && len(p.CorrelationData) == 0 && len(p.User) == 0
}

// encodePublish writes a PUBLISH described by o, with a topic alias if the client allows them. A
// new alias adds 3 bytes to the packet: past the client's Maximum Packet Size, which the session
// checked without it, the packet goes without the alias.
func (c *conn) encodePublish(buf *bytes.Buffer, o *session.Outgoing) {
	m := o.Msg
	p := wire.Publish{Version: c.version, QoS: o.QoS, Dup: o.Dup, Retain: o.Retain, PacketID: o.ID, Topic: m.Topic,
		Payload: m.Payload, PayloadFormat: m.Properties.PayloadFormat, PayloadFormatSet: m.Properties.PayloadFormatFlag,
		Expiry: o.Expiry, SubIDs: o.SubIDs}
	isNew := false
	if c.version == 5 && c.outAliases.max > 0 {
		var known bool
		p.Alias, known, isNew = c.outAliases.pick(m.Topic, o.Dup)
		if known {
			p.Topic = ""
		}
	}
	start := buf.Len()
	err := wire.EncodePublish(buf, &p)
	if err == nil && isNew && c.maxPacketSize > 0 && uint32(buf.Len()-start) > c.maxPacketSize {
		buf.Truncate(start)
		c.outAliases.forget(m.Topic)
		p.Alias = 0
		err = wire.EncodePublish(buf, &p)
	}
	if err != nil {
		c.log().Error("encode failed", slog.String("packet", "PUBLISH"), slog.Any("err", err))
		return
	}
	c.srv.traffic.publishSent(o.QoS, len(m.Payload))
}

// encodePacket appends pk to buf in the client's protocol version.
func (c *conn) encodePacket(buf *bytes.Buffer, pk *packets.Packet) {
	pk.ProtocolVersion = c.version
	var err error
	if pk.FixedHeader.Type == packets.Publish && c.outAliases.max > 0 {
		err = c.encodeAliased(buf, pk)
	} else {
		err = wire.Encode(buf, pk)
	}
	if err != nil {
		c.log().Error("encode failed", slog.String("packet", packets.PacketNames[pk.FixedHeader.Type]), slog.Any("err", err))
		return
	}
	if pk.FixedHeader.Type == packets.Publish {
		c.srv.traffic.publishSent(pk.FixedHeader.Qos, len(pk.Payload))
	}
}

// encodeAliased encodes a PUBLISH to a client that allows topic aliases, as encodePublish does.
func (c *conn) encodeAliased(buf *bytes.Buffer, pk *packets.Packet) error {
	topic, start := pk.TopicName, buf.Len()
	restore, isNew := c.outAliases.assign(pk)
	err := wire.Encode(buf, pk)
	if restore != nil {
		restore()
	}
	if err == nil && isNew && c.maxPacketSize > 0 && uint32(buf.Len()-start) > c.maxPacketSize {
		buf.Truncate(start)
		c.outAliases.forget(topic)
		err = wire.Encode(buf, pk)
	}
	return err
}
