package mqtt

import (
	"bufio"
	"bytes"
	"reflect"
	"testing"

	"github.com/oncemq/oncemq/mqtt/internal/wire"
)

// readShortAck decodes every short acknowledgement, valid or not, exactly as the general path
// (the frame reader and the codec) does, and leaves the reader at the same place.
func TestReadShortAckMatchesCodec(t *testing.T) {
	checked := 0
	for hb := 0x40; hb <= 0x7F; hb++ { // PUBACK..PUBCOMP with every flag combination
		for _, version := range []byte{4, 5} {
			for _, n := range []byte{2, 3} {
				for _, maxSize := range []int{0, 3} {
					data := []byte{byte(hb), n, 0x12, 0x34, 0x91, 0xAA}
					fast := bufio.NewReader(bytes.NewReader(data))
					fast.Peek(len(data))
					first, _ := fast.ReadByte()
					got, ok := readShortAck(first, fast, version, maxSize)

					slow := bufio.NewReader(bytes.NewReader(data))
					first, _ = slow.ReadByte()
					want, body, err := wire.ReadFrameWith(first, slow, version, maxSize, nil)
					if err == nil {
						err = checkAndDecode(&want, body, version)
					}
					switch {
					case !ok && err == nil:
						t.Errorf("0x%02X v%d n=%d max=%d: valid ack left to the general path", hb, version, n, maxSize)
					case ok && err != nil:
						t.Errorf("0x%02X v%d n=%d max=%d: fast path took an ack the codec refuses (%v)", hb, version, n, maxSize, err)
					case ok && !reflect.DeepEqual(got, want):
						t.Errorf("0x%02X v%d n=%d: got %+v, want %+v", hb, version, n, got, want)
					case ok && fast.Buffered() != slow.Buffered():
						t.Errorf("0x%02X v%d n=%d: %d bytes left, want %d", hb, version, n, fast.Buffered(), slow.Buffered())
					}
					if ok {
						checked++
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no ack took the fast path")
	}
}
