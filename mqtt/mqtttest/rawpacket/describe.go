package rawpacket

import (
	"fmt"
	"strings"

	"github.com/mochi-mqtt/server/v2/packets"
)

// maxPayloadShown bounds the payload Describe prints.
const maxPayloadShown = 40

// Describe is a one-line summary of pk for test failures and protocol error reports.
func Describe(pk packets.Packet) string {
	fh := pk.FixedHeader
	name := strings.ToUpper(packets.PacketNames[fh.Type])
	switch fh.Type {
	case packets.Connack:
		s := fmt.Sprintf("CONNACK(rc=0x%02X sp=%t", pk.ReasonCode, pk.SessionPresent)
		if pk.Properties.AssignedClientID != "" {
			s += fmt.Sprintf(" assigned=%q", pk.Properties.AssignedClientID)
		}
		return s + ")"
	case packets.Publish:
		payload := fmt.Sprintf("%q", pk.Payload)
		if len(pk.Payload) > maxPayloadShown {
			payload = fmt.Sprintf("%q...(%d bytes)", pk.Payload[:maxPayloadShown], len(pk.Payload))
		}
		return fmt.Sprintf("PUBLISH(topic=%q qos=%d id=%d dup=%t retain=%t payload=%s)",
			pk.TopicName, fh.Qos, pk.PacketID, fh.Dup, fh.Retain, payload)
	case packets.Puback, packets.Pubrec, packets.Pubrel, packets.Pubcomp:
		return fmt.Sprintf("%s(id=%d rc=0x%02X)", name, pk.PacketID, pk.ReasonCode)
	case packets.Subscribe, packets.Unsubscribe:
		filters := make([]string, len(pk.Filters))
		for i, f := range pk.Filters {
			filters[i] = fmt.Sprintf("%q@%d", f.Filter, f.Qos)
		}
		return fmt.Sprintf("%s(id=%d filters=%s)", name, pk.PacketID, strings.Join(filters, ","))
	case packets.Suback, packets.Unsuback:
		return fmt.Sprintf("%s(id=%d codes=% x)", name, pk.PacketID, pk.ReasonCodes)
	case packets.Disconnect:
		return fmt.Sprintf("DISCONNECT(rc=0x%02X)", pk.ReasonCode)
	}
	return name
}

// DescribeAll is Describe for a list, in brackets.
func DescribeAll(pks []packets.Packet) string {
	s := make([]string, len(pks))
	for i, pk := range pks {
		s[i] = Describe(pk)
	}
	return "[" + strings.Join(s, ", ") + "]"
}
