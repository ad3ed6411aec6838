package inflight

import (
	"bytes"
	"hash/crc32"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"
)

// BenchmarkLogRecordEncode measures the committer's encoding of one log record: a round of 16
// batches, each one QoS 2 PUBLISH of 16 bytes routed to one subscriber (the inbound id, the
// message, the outbound entry), with the record's CRC-32C.
func BenchmarkLogRecordEncode(b *testing.B) {
	round := make([]*Batch, 16)
	for i := range round {
		m := &Message{Seq: uint64(i + 1), Topic: "bench/topic", Payload: []byte("0123456789abcdef"), QoS: 2}
		var batch Batch
		batch.PutInbound("publisher-1", uint16(i+1), 0)
		batch.PutMessage(m)
		batch.PutOutbound("subscriber-1", OutboundRecord{PacketID: uint16(i + 1), State: PublishSent, QoS: 2, Order: uint64(i), MsgSeq: m.Seq})
		round[i] = &batch
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = append(buf[:0], make([]byte, logHeader+9)...)
		var err error
		for _, batch := range round {
			if buf, err = appendOps(buf, batch.ops); err != nil {
				b.Fatal(err)
			}
		}
		_ = crc32.Checksum(buf[logHeader:], castagnoli)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(round)), "ns/batch")
}

// A message without properties is written into the log record, and into bbolt by encodeMessage,
// byte for byte as the codec (encodeMessageCodec) encodes its value, for every QoS, retain flag,
// and Remaining Length of one to three bytes; one with any property is not taken by the fast path.
func TestPlainMessageMatchesEncodeMessage(t *testing.T) {
	for _, qos := range []byte{0, 1, 2} {
		for _, retain := range []bool{false, true} {
			for _, size := range []int{0, 5, 100, 124, 125, 200, 16370, 16380, 20000, 2100000} {
				for _, topic := range []string{"t", "a/much/longer/topic/name/with/levels"} {
					m := &Message{Seq: 7, Topic: topic, Payload: bytes.Repeat([]byte{0xa5}, size), QoS: qos,
						Retain: retain, Created: 1764590000123456789, ExpiresAt: 1764590060000000000}
					want, err := encodeMessageCodec(m)
					if err != nil {
						t.Fatal(err)
					}
					if v, err := encodeMessage(m); err != nil || !bytes.Equal(v, want) {
						t.Fatalf("qos %d retain %v %d bytes topic %q: encodeMessage differs from the codec (%v)", qos, retain, size, topic, err)
					}
					n, ok := plainMessageSize(m)
					if !ok || n != len(want) {
						t.Fatalf("qos %d retain %v %d bytes: plainMessageSize = %d, %v; the codec wrote %d", qos, retain, size, n, ok, len(want))
					}
					if got := appendPlainMessage([]byte{0xee}, m); !bytes.Equal(got[1:], want) || got[0] != 0xee {
						t.Fatalf("qos %d retain %v %d bytes topic %q: the fast path differs from the codec", qos, retain, size, topic)
					}
				}
			}
		}
	}
	for _, props := range []packets.Properties{
		{ContentType: "text/plain"}, {MessageExpiryInterval: 30}, {PayloadFormat: 1, PayloadFormatFlag: true},
		{User: []packets.UserProperty{{Key: "k", Val: "v"}}}, {CorrelationData: []byte{1}}, {ResponseTopic: "r"},
	} {
		if _, ok := plainMessageSize(&Message{Topic: "t", QoS: 1, Properties: props}); ok {
			t.Errorf("a message with properties %+v taken by the fast path", props)
		}
	}
}
