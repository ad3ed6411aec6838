// Package websocket carries MQTT over WebSocket (MQTT 5.0 and 3.1.1, section 6) for package mqtt:
// an http.Handler that upgrades requests offering the "mqtt" subprotocol and hands each
// connection, as a net.Conn whose bytes are the payloads of binary messages, to a net.Listener
// that mqtt.Server.Serve accepts from. The broker then treats a WebSocket client exactly as a TCP
// one: same sessions, same hooks.
//
// A program serving MQTT on its own HTTP server mounts a Listener on Path:
//
//	wl := websocket.NewListener(httpListener.Addr())
//	mux.Handle(websocket.Path, wl)
//	go http.Serve(httpListener, mux)
//	go srv.Serve(wl)
//
// or lets Listen run the HTTP server: srv.Serve(websocket.Listen(ln)), with ln a TCP listener or
// a crypto/tls one for wss://. Over TLS a connection's ConnectionState method gives the hooks the
// client's certificate, as a *tls.Conn does.
//
// It is built on github.com/gorilla/websocket.
package websocket
