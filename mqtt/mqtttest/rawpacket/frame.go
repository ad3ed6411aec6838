package rawpacket

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt/internal/wire"
)

// ErrMalformed is wrapped by ReadFromServer's errors about bytes that are not a packet a server may
// send. Errors of the connection itself (io.EOF, io.ErrUnexpectedEOF, a deadline) are not.
var ErrMalformed = wire.ErrMalformed

// Append encodes pk in protocol version and appends it to buf. pk is taken by value: its
// ProtocolVersion is set on a copy.
func Append(buf *bytes.Buffer, pk packets.Packet, version byte) error {
	pk.ProtocolVersion = version
	if err := wire.Encode(buf, &pk); err != nil {
		return fmt.Errorf("encode %s: %w", Describe(pk), err)
	}
	return nil
}

// Encode encodes pk in protocol version.
func Encode(pk packets.Packet, version byte) ([]byte, error) {
	var buf bytes.Buffer
	err := Append(&buf, pk, version)
	return buf.Bytes(), err
}

// ReadFromServer reads and decodes one packet a server sent, in protocol version. maxSize (0: none)
// bounds the packet before its body is allocated, so that garbage cannot make the reader allocate
// gigabytes. If raw is not nil, the bytes read are appended to it, the fixed header included, also
// when they turn out malformed. Each packet has its own buffer: its topic and payload stay valid.
//
// A Remaining Length that is not minimal, bad fixed header flags, a packet type only clients send
// and a body the codec cannot decode are ErrMalformed: a broker must never send them.
func ReadFromServer(r *bufio.Reader, version byte, maxSize int, raw *[]byte) (packets.Packet, error) {
	hb, err := r.ReadByte()
	if err != nil {
		return packets.Packet{}, err // io.EOF here is a clean end between packets
	}
	var src wire.Reader = r
	if raw != nil {
		*raw = append(*raw, hb)
		src = &recorder{r: r, raw: raw}
	}
	pk, body, err := wire.ReadFrame(hb, src, version, maxSize)
	if err != nil {
		if isConnError(err) {
			return pk, err
		}
		return pk, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if !wire.FromServer(pk.FixedHeader.Type) {
		return pk, fmt.Errorf("%w: packet type %d is not sent by a server", ErrMalformed, pk.FixedHeader.Type)
	}
	if err := wire.Decode(&pk, body); err != nil {
		return pk, fmt.Errorf("%w: %s: %w", ErrMalformed, packets.PacketNames[pk.FixedHeader.Type], err)
	}
	return pk, nil
}

// isConnError reports whether a ReadFrame error came from the connection rather than the bytes.
func isConnError(err error) bool {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var code packets.Code // a fixed header the codec refused
	return !errors.Is(err, wire.ErrMalformed) && !errors.Is(err, wire.ErrTooLarge) && !errors.As(err, &code)
}

// recorder keeps every byte read through it.
type recorder struct {
	r   *bufio.Reader
	raw *[]byte
}

func (c *recorder) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		*c.raw = append(*c.raw, b)
	}
	return b, err
}

func (c *recorder) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.raw = append(*c.raw, p[:n]...)
	return n, err
}
