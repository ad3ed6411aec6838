package mqtt

import (
	"fmt"

	"github.com/mochi-mqtt/server/v2/packets"
)

// The codec decodes MQTT 5.0 properties into a struct, which loses two things the spec makes
// errors: a property that may appear once appearing twice [MQTT-2.2.2-2], and a value of 0 where 0
// is forbidden (Receive Maximum, checklist E1; Maximum Packet Size, E8), since 0 also means
// "absent" in the struct. checkProperties reads the raw property block before the codec does.

// propKind is how a property's value is encoded (5.0 section 2.2.2.2).
type propKind byte

const (
	propByte propKind = iota + 1
	propUint16
	propUint32
	propVarint
	propString
	propBinary
	propStringPair
)

var propKinds = map[byte]propKind{
	0x01: propByte, 0x02: propUint32, 0x03: propString, 0x08: propString, 0x09: propBinary,
	0x0B: propVarint, 0x11: propUint32, 0x12: propString, 0x13: propUint16, 0x15: propString,
	0x16: propBinary, 0x17: propByte, 0x18: propUint32, 0x19: propByte, 0x1A: propString,
	0x1C: propString, 0x1F: propString, 0x21: propUint16, 0x22: propUint16, 0x23: propUint16,
	0x24: propByte, 0x25: propByte, 0x26: propStringPair, 0x27: propUint32, 0x28: propByte,
	0x29: propByte, 0x2A: propByte,
}

const (
	propUserProperty      = 0x26
	propReceiveMaximum    = 0x21
	propMaximumPacketSize = 0x27
)

// checkProperties validates the property block(s) of a 5.0 packet body.
func checkProperties(typ byte, flags packets.FixedHeader, body []byte) error {
	off, ok := propertiesOffset(typ, flags, body)
	if !ok {
		return nil // no properties, or a layout the decoder will reject on its own
	}
	end, err := checkPropertyBlock(body, off)
	if err != nil || typ != packets.Connect {
		return err
	}
	// The will properties follow the client identifier when the Will Flag is set.
	connectFlags := body[off-3]
	if connectFlags&0x04 == 0 {
		return nil
	}
	if end+2 > len(body) {
		return nil
	}
	idLen := int(body[end])<<8 | int(body[end+1])
	_, err = checkPropertyBlock(body, end+2+idLen)
	return err
}

// propertiesOffset finds where the property length starts in a packet body.
func propertiesOffset(typ byte, fh packets.FixedHeader, body []byte) (int, bool) {
	switch typ {
	case packets.Connect:
		if len(body) < 2 {
			return 0, false
		}
		off := 2 + (int(body[0])<<8 | int(body[1])) + 1 + 1 + 2 // name, level, flags, keep alive
		return off, off <= len(body)
	case packets.Publish:
		if len(body) < 2 {
			return 0, false
		}
		off := 2 + (int(body[0])<<8 | int(body[1]))
		if fh.Qos > 0 {
			off += 2
		}
		return off, off <= len(body)
	case packets.Puback, packets.Pubrec, packets.Pubrel, packets.Pubcomp:
		return 3, len(body) > 3
	case packets.Subscribe, packets.Unsubscribe:
		return 2, len(body) > 2
	case packets.Disconnect, packets.Auth:
		return 1, len(body) > 1
	}
	return 0, false
}

// checkPropertyBlock checks the property block at off and returns where it ends.
func checkPropertyBlock(body []byte, off int) (int, error) {
	n, size, ok := varint(body, off)
	if !ok {
		return 0, malformed("property length")
	}
	start := off + size
	end := start + n
	if end > len(body) {
		return 0, malformed("property length beyond the packet")
	}
	var seen [256]bool
	for p := start; p < end; {
		id := body[p]
		p++
		kind, known := propKinds[id]
		if !known {
			return 0, malformed(fmt.Sprintf("unknown property 0x%02X", id))
		}
		if id != propUserProperty && id != 0x0B && seen[id] {
			return 0, protocolViolation(fmt.Sprintf("property 0x%02X included more than once", id)) // [MQTT-2.2.2-2]
		}
		seen[id] = true
		var width int
		switch kind {
		case propByte:
			width = 1
		case propUint16:
			width = 2
		case propUint32:
			width = 4
		case propVarint:
			_, w, ok := varint(body[:end], p)
			if !ok {
				return 0, malformed("variable byte integer property")
			}
			width = w
		case propString, propBinary:
			if p+2 > end {
				return 0, malformed("truncated property")
			}
			width = 2 + (int(body[p])<<8 | int(body[p+1]))
		case propStringPair:
			if p+2 > end {
				return 0, malformed("truncated property")
			}
			k := 2 + (int(body[p])<<8 | int(body[p+1]))
			if p+k+2 > end {
				return 0, malformed("truncated property")
			}
			width = k + 2 + (int(body[p+k])<<8 | int(body[p+k+1]))
		}
		if p+width > end {
			return 0, malformed("truncated property")
		}
		if (id == propReceiveMaximum || id == propMaximumPacketSize) && allZero(body[p:p+width]) {
			return 0, protocolViolation(fmt.Sprintf("property 0x%02X is 0", id)) // E1, E8
		}
		p += width
	}
	return end, nil
}

// varint decodes a Variable Byte Integer at off: its value, its size, and whether it is valid.
func varint(b []byte, off int) (value, size int, ok bool) {
	shift := 0
	for i := 0; i < 4; i++ {
		if off+i >= len(b) {
			return 0, 0, false
		}
		c := b[off+i]
		value |= int(c&0x7F) << shift
		if c&0x80 == 0 {
			return value, i + 1, true
		}
		shift += 7
	}
	return 0, 0, false
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
