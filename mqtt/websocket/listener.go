package websocket

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	gws "github.com/gorilla/websocket"
)

const (
	// Path is where Listen serves MQTT, as mosquitto, EMQX and HiveMQ do by default, and where
	// browser clients such as the mqtt npm package connect unless told otherwise.
	Path = "/mqtt"
	// Subprotocol is the WebSocket subprotocol a client must offer and the server selects
	// [MQTT-6.0.0-3] [MQTT-6.0.0-4].
	Subprotocol = "mqtt"
	// handshakeTimeout bounds the HTTP request and the upgrade, so that a client that opens a
	// socket and sends nothing does not hold it.
	handshakeTimeout = 10 * time.Second
)

// Listener is both an http.Handler that upgrades WebSocket requests and the net.Listener whose
// Accept returns the upgraded connections. Give it to mqtt.Server.Serve.
type Listener struct {
	addr     net.Addr
	upgrader gws.Upgrader
	conns    chan net.Conn
	closed   chan struct{}
	server   *http.Server // set by Listen; closed with the Listener

	closeOnce sync.Once
}

// NewListener returns a Listener whose Addr is addr, the address of the HTTP server that will
// route requests to it.
func NewListener(addr net.Addr) *Listener {
	l := &Listener{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
	l.upgrader = gws.Upgrader{
		HandshakeTimeout: handshakeTimeout,
		Subprotocols:     []string{Subprotocol},
		// Any origin: an MQTT client authenticates in CONNECT, never with the browser's cookies,
		// so a page from another site gains nothing by connecting; refusing foreign origins would
		// only stop the browser dashboards that MQTT over WebSocket is for.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	return l
}

// Listen serves ln over HTTP with a Listener at Path (any other path is 404) and returns the
// Listener; closing it closes ln. With a crypto/tls listener as ln, this is wss://.
func Listen(ln net.Listener) *Listener {
	l := NewListener(ln.Addr())
	mux := http.NewServeMux()
	mux.Handle(Path, l)
	l.server = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: handshakeTimeout,
		IdleTimeout:       handshakeTimeout,
		ErrorLog:          slog.NewLogLogger(slog.Default().Handler(), slog.LevelDebug),
	}
	go func() { _ = l.server.Serve(ln) }() // returns when Close closes the server
	return l
}

// ServeHTTP upgrades a request that offers the "mqtt" subprotocol and queues the connection for
// Accept; any other request gets 400 [MQTT-6.0.0-3].
func (l *Listener) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !slices.Contains(gws.Subprotocols(r), Subprotocol) {
		http.Error(w, `MQTT over WebSocket needs the subprotocol "mqtt" (Sec-WebSocket-Protocol: mqtt)`, http.StatusBadRequest)
		return
	}
	ws, err := l.upgrader.Upgrade(w, r, nil) // answers the client itself on failure
	if err != nil {
		return
	}
	c := NewConn(ws, r.TLS)
	select {
	case l.conns <- c:
	case <-l.closed:
		c.Close()
	}
}

// Accept waits for the next upgraded connection.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close stops Accept, and the HTTP server if Listen started it; connections already accepted
// stay open.
func (l *Listener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.closed)
		if l.server != nil {
			err = l.server.Close()
		}
	})
	return err
}

// Addr is the address of the HTTP server.
func (l *Listener) Addr() net.Addr { return l.addr }

// Dial connects to an MQTT over WebSocket server at url (ws://host:port/mqtt or wss://...),
// offering the "mqtt" subprotocol, and returns the connection as a byte stream for an MQTT client.
// tlsConfig is used for wss:// and may be nil.
func Dial(ctx context.Context, url string, tlsConfig *tls.Config) (net.Conn, error) {
	d := gws.Dialer{HandshakeTimeout: handshakeTimeout, Subprotocols: []string{Subprotocol}, TLSClientConfig: tlsConfig}
	ws, resp, err := d.DialContext(ctx, url, nil)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("websocket dial %s: %w (HTTP %s)", url, err, resp.Status)
		}
		return nil, fmt.Errorf("websocket dial %s: %w", url, err)
	}
	if ws.Subprotocol() != Subprotocol {
		ws.Close()
		return nil, fmt.Errorf("websocket dial %s: server selected subprotocol %q, want %q", url, ws.Subprotocol(), Subprotocol)
	}
	var state *tls.ConnectionState
	if tc, ok := ws.NetConn().(*tls.Conn); ok {
		st := tc.ConnectionState()
		state = &st
	}
	return NewConn(ws, state), nil
}
