package mqtt

import (
	"bufio"
	"bytes"
	"io"
	"testing"

	"github.com/oncemq/oncemq/mqtt/mqtttest/fixture"
)

// FuzzReadPacket feeds arbitrary bytes to the packet reader under both protocol versions, whole and
// split in two (as a partial read would deliver them): it must return a packet or an error, never
// panic, and never allocate past the maximum packet size. Every packet fixture of testdata/packets
// is a seed too.
func FuzzReadPacket(f *testing.F) {
	seeds := [][]byte{
		{0x10, 0x10, 0, 4, 'M', 'Q', 'T', 'T', 5, 2, 0, 60, 0, 0, 3, 'a', 'b', 'c'},
		{0x34, 0x08, 0, 1, 'a', 0, 7, 0, 'h', 'i'},
		{0x62, 0x02, 0, 7},
		{0x82, 0x07, 0, 1, 0, 0, 1, '#', 2},
		{0x30, 0x80, 0x80, 0x80, 0x80, 0x00},
		{0x32, 0x0C, 0, 1, 'a', 0, 1, 6, 0x21, 0, 0, 0x21, 0, 1},
		{0xE0, 0x00},
	}
	for _, s := range seeds {
		f.Add(s)
	}
	cases, err := fixture.LoadAll()
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range cases {
		f.Add([]byte(c.Bytes))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, version := range []byte{4, 5} {
			_, _ = readPacket(bufio.NewReader(bytes.NewReader(data)), version, 4096)
			half := len(data) / 2
			r := bufio.NewReader(&splitReader{parts: [][]byte{data[:half], data[half:]}})
			_, _ = readPacket(r, version, 4096)
		}
	})
}

// splitReader returns its parts one Read at a time.
type splitReader struct{ parts [][]byte }

func (s *splitReader) Read(p []byte) (int, error) {
	for len(s.parts) > 0 && len(s.parts[0]) == 0 {
		s.parts = s.parts[1:]
	}
	if len(s.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.parts[0])
	s.parts[0] = s.parts[0][n:]
	return n, nil
}
