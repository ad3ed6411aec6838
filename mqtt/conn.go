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
	"github.com/oncemq/oncemq/session"
	"github.com/oncemq/oncemq/session/reason"
)

// packetCost is what a packet other than PUBLISH counts against a connection's write queue: the
// share of its queue slot.
const packetCost = 64

// writeTimeout bounds one socket write; a peer that does not read for that long is dropped.
const writeTimeout = 30 * time.Second

// An idle connection holds no buffers: the read buffer and the write buffer come from these pools
// while a packet is being read or a batch written, so that 100,000 idle devices cost little more
// than their sockets and one goroutine each.
var (
	readBuffers  = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}
	writeBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}
	// queues holds emptied outgoing queues: growing a fresh queue for every burst showed in
	// profiles.
	queues = sync.Pool{New: func() any { return new([]session.Outgoing) }}
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
	overLimit  bool          // accepted past Options.MaxConnections: its CONNECT is refused

	// Reader goroutine only (see socketread.go).
	pre           [prefixSize]byte // the start of the next burst, read without a buffer while idle
	preOff, preN  uint8            // pre[preOff:preN] is not yet in the read buffer
	inLoop        bool             // past CONNECT: the reader sets its own deadlines
	packetArmed   bool             // packetEnd is set for the packet being read
	packetEnd     time.Time        // when the rest of the packet being read must have come
	deadline      time.Time        // the read deadline in force, if deadlineKnown
	deadlineKnown bool
	coarse        bool // the deadline may fire early and be waited past (coarseDeadlines)

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
	outAliases    outAliases        // outbound topic aliases; max set by CONNECT, used by the writer only
	held          *heldPacket       // read with the CONNECT, handled after its CONNACK; reader only

	qos1Pending atomic.Int32 // QoS 1 PUBLISHes received whose PUBACK is not sent yet
	dropped     atomic.Uint64

	mu          sync.Mutex // guards the following
	queue       []session.Outgoing
	queueBox    *[]session.Outgoing // the pool's box queue came in, given back with it (no allocation)
	outBytes    int                 // bytes queued or reserved for the writer (Options.WriteQueueBytes)
	wantDrain   bool                // a Reserve was refused: tell the broker when the queue has room again
	drainTo     *session.Session    // c.sess, for the writer, once CONNECT has set it
	writing     bool                // a writer goroutine is running (after closing: it ran and closed the socket)
	closing     bool
	closeReason reason.Code

	writerDone chan struct{} // closed once the socket is closed
	readerDone chan struct{} // closed once the reader reads no more (see linger)
}

func newConn(srv *Server, nc net.Conn, listener net.Addr) *conn {
	return &conn{srv: srv, nc: nc, listener: listener, acceptedAt: time.Now(), writerDone: make(chan struct{}),
		readerDone: make(chan struct{}), coarse: coarseDeadlines(nc)}
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

// readPacket reads the packet whose start awaitPacket saw: its first bytes are in c.pre when the
// connection was idle, in the read buffer otherwise.
//
// The rest of the packet must arrive within Options.PacketTimeout (or the keep alive, if shorter;
// see socketReader), and a large body waits for room in the server's read budget before it is
// allocated.
func (c *conn) readPacket() (packets.Packet, error) {
	c.packetArmed = false
	c.acquireReader()
	hb, err := c.br.ReadByte()
	if err != nil {
		return packets.Packet{}, err
	}
	timeout := c.srv.opts.PacketTimeout
	held := 0
	pk, err := readPacketAfter(hb, c.br, c.version, c.srv.opts.MaxPacketSize, func(n int) error {
		if n < budgetFloor {
			return nil
		}
		if err := c.srv.readBudget.acquire(n, time.Now().Add(timeout)); err != nil {
			return err
		}
		held = n
		return nil
	})
	if held > 0 {
		c.srv.readBudget.release(held)
	}
	if err == nil {
		c.srv.traffic.received(&pk)
	}
	return pk, err
}

func (c *conn) acquireReader() {
	if c.br == nil {
		c.br = readBuffers.Get().(*bufio.Reader)
		c.br.Reset((*socketReader)(c))
	}
}

func (c *conn) releaseReader() {
	if c.br != nil {
		c.br.Reset(nil)
		readBuffers.Put(c.br)
		c.br = nil
	}
}

// sendCost is what pk counts against the write queue; a QoS 1 or 2 PUBLISH was reserved before.
func sendCost(pk *session.Outgoing) int {
	return pk.Cost(packetCost)
}

// Reserve claims n bytes of the write queue for a QoS 1 or 2 PUBLISH about to be sent, unless the
// queue is at Options.WriteQueueBytes; an empty queue takes a message of any size. It implements
// session.Conn: a refusal leaves the message in the session's queue, and the writer calls
// Broker.Drained when it has written half of what it holds.
func (c *conn) Reserve(n int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	if c.outBytes > 0 && c.outBytes+n > c.srv.opts.WriteQueueBytes {
		c.wantDrain = true
		return false
	}
	c.outBytes += n
	return true
}

// Send queues pk for the writer. It never blocks. A QoS 0 PUBLISH past the write queue's limit is
// dropped and counted; a client that lets its acknowledgements pile up past twice the limit is
// closed, as it does not read.
func (c *conn) Send(pk session.Outgoing) {
	typ := pk.Kind()
	if typ == packets.Puback {
		c.qos1Pending.Add(-1)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return
	}
	limit := c.srv.opts.WriteQueueBytes
	isPublish := typ == packets.Publish
	switch {
	case isPublish && pk.QoS > 0: // reserved
	case isPublish && c.outBytes > 0 && c.outBytes+sendCost(&pk) > limit:
		c.dropped.Add(1)
		c.srv.traffic.qos0Overflow.Add(1)
		return
	case !isPublish && c.outBytes > 2*limit:
		c.closing, c.closeReason = true, reason.QuotaExceeded
		c.startWriter()
		return
	default:
		c.outBytes += sendCost(&pk)
	}
	if c.queue == nil {
		c.queueBox = queues.Get().(*[]session.Outgoing)
		c.queue = *c.queueBox
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

// isClosing reports whether the connection is being closed by the broker.
func (c *conn) isClosing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closing
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
		batch, box := c.queue, c.queueBox
		c.queue, c.queueBox = nil, nil
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
			if batch[i].Kind() == packets.Publish {
				publishes++
			}
		}
		disconnect := closing && c.version == 5 && closeReason.IsFailure()
		if disconnect {
			d := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Disconnect}, ReasonCode: byte(closeReason)}
			c.encodePacket(buf, &d)
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
				closing, disconnect = true, false
			}
		}
		c.written(batch)
		if box != nil && cap(batch) <= maxPooledQueue {
			clear(batch) // drop the messages' payloads for the collector
			*box = batch[:0]
			queues.Put(box)
		}
		if closing {
			if disconnect {
				c.linger()
			}
			c.nc.Close()
			close(c.writerDone)
			return
		}
	}
}

// written gives the bytes of batch back to the write queue and, if a Reserve was refused and half
// the limit is free again, tells the broker to send what waits. Runs on the writer goroutine.
func (c *conn) written(batch []session.Outgoing) {
	n := 0
	for i := range batch {
		n += sendCost(&batch[i])
	}
	c.mu.Lock()
	c.outBytes -= n
	c.mu.Unlock()
	c.drainIfRoom()
}

// drainIfRoom calls Broker.Drained if a Reserve was refused and half the write queue is free.
func (c *conn) drainIfRoom() {
	c.mu.Lock()
	s := c.drainTo
	drained := s != nil && c.wantDrain && !c.closing && c.outBytes <= c.srv.opts.WriteQueueBytes/2
	if drained {
		c.wantDrain = false
	}
	c.mu.Unlock()
	if drained {
		c.eng.broker.Drained(s, c)
	}
}

// attach gives the writer the session CONNECT opened, for drainIfRoom.
func (c *conn) attach(s *session.Session) {
	c.mu.Lock()
	c.drainTo = s
	c.mu.Unlock()
	c.drainIfRoom()
}
