package wire

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"
)

// EncodePublish writes the same bytes as the codec's PublishEncode for every combination of the
// fields it covers, so that the writer's fast path changes nothing on the wire.
func TestEncodePublishFieldsMatchCodec(t *testing.T) {
	payloads := [][]byte{nil, []byte("x"), bytes.Repeat([]byte("p"), 200)}
	topics := []string{"a/b", "", strings.Repeat("t", 130)}
	subIDs := [][]int{nil, {1}, {0, 7, 268_435_455}}
	n := 0
	for _, version := range []byte{4, 5} {
		for qos := byte(0); qos <= 2; qos++ {
			for _, flags := range []int{0, 1, 2, 3} {
				for _, topic := range topics {
					for _, payload := range payloads {
						for _, ids := range subIDs {
							for _, expiry := range []uint32{0, 1, 1 << 31} {
								for _, alias := range []uint16{0, 1, 300} {
									for _, format := range []int{-1, 0, 1} {
										p := Publish{Version: version, QoS: qos, Dup: flags&1 != 0, Retain: flags&2 != 0,
											Topic: topic, Payload: payload, Expiry: expiry, SubIDs: ids, Alias: alias}
										if qos > 0 {
											p.PacketID = 513
										}
										if format >= 0 {
											p.PayloadFormat, p.PayloadFormatSet = byte(format), true
										}
										checkPublish(t, &p)
										n++
									}
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d combinations", n)
}

func checkPublish(t *testing.T, p *Publish) {
	t.Helper()
	pk := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Publish, Qos: p.QoS, Dup: p.Dup, Retain: p.Retain},
		ProtocolVersion: p.Version, TopicName: p.Topic, Payload: p.Payload, PacketID: p.PacketID,
		Properties: packets.Properties{MessageExpiryInterval: p.Expiry, SubscriptionIdentifier: p.SubIDs,
			TopicAlias: p.Alias, TopicAliasFlag: p.Alias > 0, PayloadFormat: p.PayloadFormat, PayloadFormatFlag: p.PayloadFormatSet},
		Mods: packets.Mods{AllowResponseInfo: true},
	}
	var want, got bytes.Buffer
	if err := pk.PublishEncode(&want); err != nil {
		t.Fatal(err)
	}
	if err := EncodePublish(&got, p); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("%+v:\n got % x\nwant % x", *p, got.Bytes(), want.Bytes())
	}
}

// A QoS 1 or 2 PUBLISH without a packet identifier is refused [MQTT-2.2.1-3].
func TestEncodePublishNeedsPacketID_MQTT_2_2_1_3(t *testing.T) {
	for _, qos := range []byte{1, 2} {
		var buf bytes.Buffer
		err := EncodePublish(&buf, &Publish{Version: 5, QoS: qos, Topic: "a"})
		if err == nil || buf.Len() != 0 {
			t.Errorf("QoS %d without id: err %v, %d bytes written", qos, err, buf.Len())
		}
	}
}

// EncodeAck writes what Encode writes for the same acknowledgement without properties.
func TestEncodeAckMatchesEncode(t *testing.T) {
	for _, typ := range []byte{packets.Puback, packets.Pubrec, packets.Pubrel, packets.Pubcomp} {
		for _, version := range []byte{4, 5} {
			for _, code := range []byte{0, 0x10, 0x92} {
				pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: typ}, ProtocolVersion: version, PacketID: 0x1234, ReasonCode: code}
				if typ == packets.Pubrel {
					pk.FixedHeader.Qos = 1
				}
				var want, got bytes.Buffer
				if err := Encode(&want, &pk); err != nil {
					t.Fatal(err)
				}
				EncodeAck(&got, typ, 0x1234, code, version)
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Errorf("%s v%d 0x%02X: got % x, want % x", packets.PacketNames[typ], version, code, got.Bytes(), want.Bytes())
				}
			}
		}
	}
}
