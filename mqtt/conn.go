package mqtt

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/oncemq/oncemq/mqtt/internal/wire"
	"github.com/oncemq/oncemq/session"
	"github.com/oncemq/oncemq/session/reason"
)

// maxQueuedPackets bounds a connection's outgoing queue. QoS 1/2 deliveries are bounded by the
// client's Receive Maximum; past this bound only QoS 0 PUBLISHes are dropped, as a slow consumer
// cannot be waited for.
const maxQueuedPackets = 65536

// writeTimeout bounds one socket write; a peer that does not read for that long is dropped.
const writeTimeout = 30 * time.Second

// An idle connection holds no buffers: the read buffer and the write buffer come from these pools
// while a packet is being read or a batch written, so that 100,000 idle devices cost little more
// than their sockets and one goroutine each.
var (
	readBuffers  = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}
	writeBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}
	// queues holds emptied outgoing queues: a packet is 800 bytes, and growing a fresh queue for
	// every burst showed in profiles.
	queues = sync.Pool{New: func() any { return new([]packets.Packet) }}
)

// maxPooledQueue is the largest queue capacity given back to the pool.
const maxPooledQueue = 256

// conn is one client connection: a reader goroutine (serve) that decodes and hands packets to the
// session layer, and a writer goroutine, started when there is something to write and gone when
// the queue is empty. It implements session.Conn.
type conn struct {
	srv        *Server
	nc         net.Conn
	listener   net.Addr      // the address of the listener that accepted nc
	acceptedAt time.Time     // for the Disconnect event's Duration
	br         *bufio.Reader // nil while idle between packets
	hb         [1]byte       // the first byte of the next packet, read without a buffer
	hbRead     bool          // hb holds a byte not yet decoded

	// Set by the reader during CONNECT, read-only afterwards.
	version       byte
	clientID      string
	eng           *engine // the store and sessions it connected to; a heal closes the connection
	sess          *session.Session
	info          *Client           // the client as the hooks see it, once authenticated
	maxPacketSize uint32            // the client's; 0 unlimited
	keepAlive     time.Duration     // 1.5 x the client's Keep Alive; 0 none
	keepAliveSecs uint16            // the client's Keep Alive, for the connect log
	cleanStart    bool              // the CONNECT's Clean Start, for the connect log
	aliases       map[uint16]string // inbound topic aliases; reader only

	qos1Pending atomic.Int32 // QoS 1 PUBLISHes received whose PUBACK is not sent yet
	dropped     atomic.Uint64

	mu          sync.Mutex // guards the following
	queue       []packets.Packet
	writing     bool // a writer goroutine is running (after closing: it ran and closed the socket)
	closing     bool
	closeReason reason.Code

	writerDone chan struct{} // closed once the socket is closed
}

func newConn(srv *Server, nc net.Conn, listener net.Addr) *conn {
	return &conn{srv: srv, nc: nc, listener: listener, acceptedAt: time.Now(), writerDone: make(chan struct{})}
}

// describe is the client as the hooks see it, with the given username.
func (c *conn) describe(username string) Client {
	cl := Client{ID: c.clientID, Username: username, ProtocolVersion: c.version, Listener: c.listener, RemoteAddr: c.nc.RemoteAddr()}
	// *tls.Conn, and the connections of package mqtt/websocket that came over TLS.
	if tc, ok := c.nc.(interface{ ConnectionState() tls.ConnectionState }); ok {
		st := tc.ConnectionState() // the handshake is done: the CONNECT was read through it
		cl.TLS = &st
	}
	return cl
}

// client is the authenticated client, for the hooks called after CONNECT.
func (c *conn) client() *Client { return c.info }

// log is the connection's logger; built on use, since idle connections log nothing.
func (c *conn) log() *slog.Logger {
	l := c.srv.log.With(slog.String("remote", c.nc.RemoteAddr().String()))
	if c.clientID != "" {
		l = l.With(slog.String("client", c.clientID))
	}
	return l
}

// readPacket reads the packet whose start awaitPacket saw: its first byte is in c.hb when the
// connection was idle, in the read buffer otherwise.
func (c *conn) readPacket() (pk packets.Packet, err error) {
	if !c.hbRead {
		pk, err = readPacket(c.br, c.version, c.srv.opts.MaxPacketSize)
	} else {
		c.hbRead = false
		c.acquireReader()
		pk, err = readPacketAfter(c.hb[0], c.br, c.version, c.srv.opts.MaxPacketSize)
	}
	if err == nil {
		c.srv.traffic.received(&pk)
	}
	return pk, err
}

func (c *conn) acquireReader() {
	if c.br == nil {
		c.br = readBuffers.Get().(*bufio.Reader)
		c.br.Reset(c.nc)
	}
}

func (c *conn) releaseReader() {
	if c.br != nil {
		c.br.Reset(nil)
		readBuffers.Put(c.br)
		c.br = nil
	}
}

// Send queues pk for the writer. It never blocks.
func (c *conn) Send(pk packets.Packet) {
	if pk.FixedHeader.Type == packets.Puback {
		c.qos1Pending.Add(-1)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return
	}
	if len(c.queue) >= maxQueuedPackets && pk.FixedHeader.Type == packets.Publish && pk.FixedHeader.Qos == 0 {
		c.dropped.Add(1)
		c.srv.traffic.qos0Overflow.Add(1)
		return
	}
	if c.queue == nil {
		c.queue = *queues.Get().(*[]packets.Packet)
	}
	c.queue = append(c.queue, pk)
	c.startWriter()
}

// Close makes the writer flush what is queued, send DISCONNECT with code if the client speaks
// 5.0 and code is an error code, and close the socket. It never blocks.
func (c *conn) Close(code reason.Code) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return
	}
	c.closing = true
	c.closeReason = code
	c.startWriter()
}

// startWriter starts the writer goroutine unless one runs. c.mu must be held.
func (c *conn) startWriter() {
	if !c.writing {
		c.writing = true
		go c.writeLoop()
	}
}

// writeLoop owns every write to the socket. It encodes all that is queued into one buffer and
// writes it at once, so a burst of acks costs one syscall; it returns when the queue is empty.
func (c *conn) writeLoop() {
	buf := writeBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 64<<10 {
			buf.Reset()
			writeBuffers.Put(buf)
		}
	}()
	// A panic while encoding closes this connection only; what it did not send, the session resends
	// on resume, as after any lost connection.
	defer func() {
		if r := recover(); r != nil {
			c.log().Error("panic in connection writer; closing it", slog.Any("panic", r), slog.String("stack", string(debug.Stack())))
			c.mu.Lock()
			c.closing, c.queue = true, nil // the writer stays marked running: nothing else may write
			c.mu.Unlock()
			c.nc.Close()
			close(c.writerDone)
		}
	}()
	for {
		c.mu.Lock()
		batch := c.queue
		c.queue = nil
		closing, closeReason := c.closing, c.closeReason
		if len(batch) == 0 && !closing {
			c.writing = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()

		buf.Reset()
		count, publishes := len(batch), 0
		for i := range batch {
			c.encode(buf, &batch[i])
			if batch[i].FixedHeader.Type == packets.Publish {
				publishes++
			}
		}
		if closing && c.version == 5 && closeReason.IsFailure() {
			d := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Disconnect}, ReasonCode: byte(closeReason)}
			c.encode(buf, &d)
			count++
		}
		if buf.Len() > 0 {
			_ = c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
			n, err := c.nc.Write(buf.Bytes())
			c.srv.traffic.sent(count, publishes, n)
			if err != nil {
				c.log().Debug("write failed", slog.Any("err", err))
				c.mu.Lock()
				c.closing = true // the writer stays marked running: nothing else may write
				c.queue = nil
				c.mu.Unlock()
				closing = true
			}
		}
		if cap(batch) <= maxPooledQueue {
			clear(batch) // drop the messages' payloads for the collector
			batch = batch[:0]
			queues.Put(&batch)
		}
		if closing {
			c.nc.Close()
			close(c.writerDone)
			return
		}
	}
}

// encode appends pk to buf in the client's protocol version.
func (c *conn) encode(buf *bytes.Buffer, pk *packets.Packet) {
	pk.ProtocolVersion = c.version
	if err := wire.Encode(buf, pk); err != nil {
		c.log().Error("encode failed", slog.String("packet", packets.PacketNames[pk.FixedHeader.Type]), slog.Any("err", err))
		return
	}
	if pk.FixedHeader.Type == packets.Publish {
		c.srv.traffic.publishSent(pk.FixedHeader.Qos, len(pk.Payload))
	}
}
