package mqtt

import (
	"bufio"
	"bytes"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/oncemq/oncemq/session"
)

// maxQueuedPackets bounds a connection's outgoing queue. QoS 1/2 deliveries are bounded by the
// client's Receive Maximum; past this bound only QoS 0 PUBLISHes are dropped, as a slow consumer
// cannot be waited for.
const maxQueuedPackets = 65536

// writeTimeout bounds one socket write; a peer that does not read for that long is dropped.
const writeTimeout = 30 * time.Second

// conn is one client connection: a reader goroutine (serve) that decodes and hands packets to the
// session layer, and a writer goroutine that drains the outgoing queue. It implements session.Conn.
type conn struct {
	srv *Server
	nc  net.Conn
	br  *bufio.Reader
	log *slog.Logger

	// Set by the reader during CONNECT, read-only afterwards.
	version       byte
	clientID      string
	sess          *session.Session
	maxPacketSize uint32            // the client's; 0 unlimited
	keepAlive     time.Duration     // 1.5 x the client's Keep Alive; 0 none
	aliases       map[uint16]string // inbound topic aliases; reader only

	qos1Pending atomic.Int32 // QoS 1 PUBLISHes received whose PUBACK is not sent yet
	dropped     atomic.Uint64

	mu          sync.Mutex // guards the following
	queue       []packets.Packet
	closing     bool
	closeReason byte

	wake       chan struct{} // capacity 1: something was queued or closing was set
	writerDone chan struct{}
}

func newConn(srv *Server, nc net.Conn) *conn {
	return &conn{
		srv:        srv,
		nc:         nc,
		br:         bufio.NewReaderSize(nc, 4096),
		log:        srv.log.With(slog.String("remote", nc.RemoteAddr().String())),
		wake:       make(chan struct{}, 1),
		writerDone: make(chan struct{}),
	}
}

// Send queues pk for the writer. It never blocks.
func (c *conn) Send(pk packets.Packet) {
	if pk.FixedHeader.Type == packets.Puback {
		c.qos1Pending.Add(-1)
	}
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	if len(c.queue) >= maxQueuedPackets && pk.FixedHeader.Type == packets.Publish && pk.FixedHeader.Qos == 0 {
		c.mu.Unlock()
		c.dropped.Add(1)
		return
	}
	c.queue = append(c.queue, pk)
	c.mu.Unlock()
	c.signal()
}

// Close makes the writer flush what is queued, send DISCONNECT with reason if the client speaks
// 5.0 and reason is an error code, and close the socket. It never blocks.
func (c *conn) Close(reason byte) {
	c.mu.Lock()
	if !c.closing {
		c.closing = true
		c.closeReason = reason
	}
	c.mu.Unlock()
	c.signal()
}

func (c *conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// writeLoop owns every write to the socket. It encodes all that is queued into one buffer and
// writes it at once, so a burst of acks costs one syscall.
func (c *conn) writeLoop() {
	defer close(c.writerDone)
	defer c.nc.Close()
	var buf bytes.Buffer
	var batch []packets.Packet
	for range c.wake {
		c.mu.Lock()
		batch, c.queue = c.queue, batch[:0]
		closing, reason := c.closing, c.closeReason
		c.mu.Unlock()

		buf.Reset()
		for i := range batch {
			c.encode(&buf, &batch[i])
			batch[i] = packets.Packet{}
		}
		if closing && c.version == 5 && reason >= 0x80 {
			d := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Disconnect}, ReasonCode: reason}
			c.encode(&buf, &d)
		}
		if buf.Len() > 0 {
			_ = c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
			if _, err := c.nc.Write(buf.Bytes()); err != nil {
				c.log.Debug("write failed", slog.Any("err", err))
				c.Close(0)
				return
			}
		}
		if closing {
			return
		}
		if buf.Cap() > 1<<20 {
			buf = bytes.Buffer{} // do not keep a large buffer per idle connection
		}
	}
}

// encode appends pk to buf in the client's protocol version.
func (c *conn) encode(buf *bytes.Buffer, pk *packets.Packet) {
	pk.ProtocolVersion = c.version
	var err error
	switch pk.FixedHeader.Type {
	case packets.Connack:
		err = pk.ConnackEncode(buf)
	case packets.Publish:
		err = pk.PublishEncode(buf)
	case packets.Puback:
		err = pk.PubackEncode(buf)
	case packets.Pubrec:
		err = pk.PubrecEncode(buf)
	case packets.Pubrel:
		err = pk.PubrelEncode(buf)
	case packets.Pubcomp:
		err = pk.PubcompEncode(buf)
	case packets.Suback:
		err = pk.SubackEncode(buf)
	case packets.Unsuback:
		err = pk.UnsubackEncode(buf)
	case packets.Pingresp:
		err = pk.PingrespEncode(buf)
	case packets.Disconnect:
		err = pk.DisconnectEncode(buf)
	}
	if err != nil {
		c.log.Error("encode failed", slog.String("packet", packets.PacketNames[pk.FixedHeader.Type]), slog.Any("err", err))
	}
}
