package serve

import (
	"crypto/tls"
	"fmt"
	"net"

	"github.com/oncemq/oncemq/mqtt/websocket"
)

// listener is one bound listener of the broker and its URL scheme: mqtt (TCP), mqtts (TLS), ws
// (WebSocket) or wss (WebSocket over TLS).
type listener struct {
	scheme string
	net.Listener
}

// url is where a client reaches the listener, as the start-up log line shows it.
func (l listener) url() string {
	u := l.scheme + "://" + l.Addr().String()
	if l.scheme == "ws" || l.scheme == "wss" {
		u += websocket.Path
	}
	return u
}

// openListeners binds every listener of cfg, in the order TCP, TLS, WebSocket, WebSocket over
// TLS, each in the order given; on an error it closes those already bound.
func openListeners(cfg config, certs *certStore) (_ []listener, err error) {
	var out []listener
	defer func() {
		if err != nil {
			for _, l := range out {
				l.Close()
			}
		}
	}()
	kinds := []struct {
		scheme string
		addrs  []string
	}{{"mqtt", cfg.Listen}, {"mqtts", cfg.TLSListen}, {"ws", cfg.WSListen}, {"wss", cfg.WSSListen}}
	for _, k := range kinds {
		for _, addr := range k.addrs {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return nil, fmt.Errorf("listen on %s (%s): %w", addr, k.scheme, err)
			}
			if k.scheme == "mqtts" || k.scheme == "wss" {
				ln = tls.NewListener(ln, certs.serverConfig())
			}
			if k.scheme == "ws" || k.scheme == "wss" {
				ln = websocket.Listen(ln)
			}
			out = append(out, listener{scheme: k.scheme, Listener: ln})
		}
	}
	return out, nil
}
