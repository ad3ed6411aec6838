// Package mqtt is oncemq: an MQTT 5.0 and 3.1.1 broker whose QoS 2 delivery is exactly-once across
// client disconnects, session takeover and crashes of the broker, to embed in a Go program the way
// net/http embeds an HTTP server.
//
//	srv, err := mqtt.New(mqtt.Options{DataDir: "/var/lib/oncemq"})
//	if err != nil { ... }                       // a damaged or locked state file stops here
//	go srv.ListenAndServe()                     // or srv.Serve(ln), once per listener
//	err = srv.Publish(ctx, mqtt.Message{Topic: "a/b", Payload: p, QoS: 2})
//	...
//	srv.Shutdown(ctx)
//
// # The guarantee
//
// A PUBLISH that the broker has acknowledged (success PUBREC for QoS 2, PUBACK for QoS 1), and a
// Server.Publish that returned nil, is delivered to every session whose subscription matched when
// it arrived: exactly once at QoS 2, at least once at QoS 1, across disconnects, takeovers,
// restarts and kill -9, and with Options.NoSync unset, power loss. Every acknowledgement is sent
// only after the state it promises is committed to one bbolt file, in group commits.
// docs/ARCHITECTURE.md in the repository has the rules and the tests that prove each.
//
// # Hooks
//
// Options.Authenticator, Options.Authorizer and Options.Events let the embedding program decide
// who connects, who publishes, subscribes and reads what, and watch clients come and go. Hooks
// that may do I/O (Authenticate, CanPublish, CanSubscribe) run on the connection's goroutine before
// the broker's lock is taken. Hooks called with the broker's lock held (Authorizer.CanRead,
// Events.Drop) must not block or call back into the Server. The godoc of each says which it is.
//
// The packages below this one (session, inflight) are the engine's layers, not an API: they may
// change in any release.
package mqtt
