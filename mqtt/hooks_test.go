package mqtt_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt"
	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

// credentials is a ConnectOption with a username and a password.
func credentials(username, password string) mqtttest.ConnectOption {
	return func(pk *packets.Packet) {
		pk.Connect.UsernameFlag, pk.Connect.Username = true, []byte(username)
		pk.Connect.PasswordFlag, pk.Connect.Password = true, []byte(password)
	}
}

// passwords is an Authenticator with a fixed table. User "down" plays an authentication service
// that cannot answer, and "device" is renamed, as a certificate's Common Name would name it.
type passwords map[string]string

func (p passwords) Authenticate(_ context.Context, req *mqtt.ConnectRequest) (string, error) {
	switch {
	case req.Username == "down":
		return "", errors.New("auth service unreachable")
	case req.Username == "" || p[req.Username] != string(req.Password):
		return "", mqtt.ErrBadUsernameOrPassword
	case req.Username == "device":
		return "device-cn-42", nil
	}
	return req.Username, nil
}

// events records what the hooks were told, one line each.
type events struct {
	mu    sync.Mutex
	lines []string
}

func (e *events) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lines = append(e.lines, fmt.Sprintf(format, args...))
}

// await waits until line was recorded; hooks run on the broker's goroutines.
func (e *events) await(t *testing.T, line string) {
	t.Helper()
	deadline := time.Now().Add(mqtttest.ExpectTimeout)
	for time.Now().Before(deadline) {
		e.mu.Lock()
		found := slices.Contains(e.lines, line)
		e.mu.Unlock()
		if found {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t.Fatalf("event %q not seen; seen:\n%s", line, strings.Join(e.lines, "\n"))
}

func TestAuthenticatorDecidesConnect(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		ev := &events{}
		b := mqtttest.StartBroker(t, mqtttest.WithOptions(func(o *mqtt.Options) {
			o.Authenticator = passwords{"alice": "secret", "device": "pw"}
			o.Events.ConnectRefused = func(c *mqtt.Client, code mqtt.ReasonCode, _ error) { ev.add("refused %s: %s", c.ID, code) }
			o.Events.Connect = func(c *mqtt.Client, _ bool) { ev.add("connect %s as %s", c.ID, c.Username) }
		}))
		// 5.0 reason codes, and the 3.1.1 return codes mosquitto users know.
		bad, unavailable := byte(0x86), byte(0x88)
		if v == v311 {
			bad, unavailable = 0x04, 0x03
		}
		for _, tc := range []struct {
			user, password string
			want           byte
		}{
			{"alice", "secret", 0x00},
			{"device", "pw", 0x00},
			{"alice", "wrong", bad},
			{"mallory", "secret", bad}, // an unknown user gets the same answer as a wrong password
			{"down", "x", unavailable},
		} {
			c := b.Dial(t, v)
			c.SendConnect("c-"+tc.user, true, 0, credentials(tc.user, tc.password))
			if ack := c.Expect(t, packets.Connack); ack.ReasonCode != tc.want {
				t.Errorf("%q/%q: CONNACK 0x%02X, want 0x%02X", tc.user, tc.password, ack.ReasonCode, tc.want)
			}
			if tc.want != 0 {
				c.ExpectClosed(t)
			}
			c.Close()
		}
		anonymous := b.Dial(t, v)
		anonymous.SendConnect("c-anonymous", true, 0)
		if ack := anonymous.Expect(t, packets.Connack); ack.ReasonCode != bad {
			t.Errorf("no credentials: CONNACK 0x%02X, want 0x%02X", ack.ReasonCode, bad)
		}
		anonymous.ExpectClosed(t)
		ev.await(t, "connect c-alice as alice")
		ev.await(t, "connect c-device as device-cn-42") // the name the Authenticator returned
		ev.await(t, "refused c-mallory: Bad User Name or Password")
		ev.await(t, "refused c-down: Server unavailable")
	})
}

// denyPrefix is an Authorizer that refuses publishing, subscribing and reading under prefix.
type denyPrefix struct{ prefix string }

func (d denyPrefix) CanPublish(_ *mqtt.Client, topic string) bool {
	return !strings.HasPrefix(topic, d.prefix)
}

func (d denyPrefix) CanSubscribe(_ *mqtt.Client, filter string) bool {
	return !strings.HasPrefix(filter, d.prefix)
}

func (d denyPrefix) CanRead(_, _, topic string) bool { return !strings.HasPrefix(topic, d.prefix) }

func TestAuthorizerRefusesPublish(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t, mqtttest.WithOptions(func(o *mqtt.Options) { o.Authorizer = denyPrefix{prefix: "secret/"} }))
		sub := connectClean(t, b, v5, "watcher")
		sub.SubscribeOK(t, 1, "#", 2)
		pub := connectClean(t, b, v, "pub")
		if v == v311 {
			// 3.1.1 has no refusal code: acknowledged as usual and not routed; the QoS 2 id is
			// not stored, so PUBREL gets PUBCOMP (3.1.1 [MQTT-3.3.5-2]).
			pub.Publish("secret/a", 1, 1, []byte("x"), false)
			pub.ExpectAck(t, packets.Puback, 1, 0x00)
			pub.Publish("secret/b", 2, 2, []byte("y"), false)
			pub.ExpectAck(t, packets.Pubrec, 2, 0x00)
			pub.Pubrel(2)
			pub.ExpectAck(t, packets.Pubcomp, 2, 0x00)
			publishQoS1(t, pub, "public/c", 3, "z")
			sub.ExpectPublish(t, "public/c", 1, "z")
			sub.ExpectNothing(t, nothing)
			return
		}
		pub.Publish("secret/a", 1, 1, []byte("x"), false)
		pub.ExpectAck(t, packets.Puback, 1, 0x87)
		pub.Publish("secret/b", 2, 2, []byte("y"), false)
		pub.ExpectAck(t, packets.Pubrec, 2, 0x87)
		// After PUBREC >= 0x80 the id is free (§4.3.3): reusing it starts a new exchange,
		// which is routed, instead of being answered as a duplicate.
		publishQoS2(t, pub, "public/c", 2, "z")
		sub.ExpectPublish(t, "public/c", 2, "z")
		sub.ExpectNothing(t, nothing)
	})
}

func TestAuthorizerRefusesSubscribeFilter(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t, mqtttest.WithOptions(func(o *mqtt.Options) { o.Authorizer = denyPrefix{prefix: "secret/"} }))
		c := connectClean(t, b, v, "sub")
		c.Send(packets.Packet{
			FixedHeader: packets.FixedHeader{Type: packets.Subscribe, Qos: 1},
			PacketID:    7,
			Filters:     packets.Subscriptions{{Filter: "secret/#", Qos: 1}, {Filter: "public/#", Qos: 1}},
		})
		refused := byte(0x87)
		if v == v311 {
			refused = 0x80 // 3.1.1's only failure code
		}
		ack := c.ExpectID(t, packets.Suback, 7)
		if !slices.Equal(ack.ReasonCodes, []byte{refused, 0x01}) {
			t.Fatalf("SUBACK codes % x, want % x", ack.ReasonCodes, []byte{refused, 0x01})
		}
	})
}

// A wide subscription is granted, and every message routed to it is checked, retained included;
// CanRead sees the username the Authenticator settled.
func TestAuthorizerFiltersDelivery(t *testing.T) {
	reads := &events{}
	b := mqtttest.StartBroker(t, mqtttest.WithOptions(func(o *mqtt.Options) {
		o.Authenticator = passwords{"device": "pw"}
		o.Authorizer = readFilter{deny: "private/", reads: reads}
	}))
	pub := b.Dial(t, v5)
	pub.Connect(t, "pub", true, 0, credentials("device", "pw"))
	pub.PublishRetained("private/r", 1, 1, []byte("hidden"))
	pub.ExpectID(t, packets.Puback, 1)
	pub.PublishRetained("public/r", 1, 2, []byte("shown"))
	pub.ExpectID(t, packets.Puback, 2)

	sub := b.Dial(t, v5)
	sub.Connect(t, "sub", true, 0, credentials("device", "pw"))
	sub.SubscribeOK(t, 1, "#", 1)
	if p := sub.ExpectPublish(t, "public/r", 1, "shown"); !p.FixedHeader.Retain {
		t.Errorf("retained message delivered without the retain flag")
	}
	publishQoS1(t, pub, "private/live", 3, "hidden")
	publishQoS1(t, pub, "public/live", 4, "shown")
	p := sub.ExpectPublish(t, "public/live", 1, "shown")
	sub.Puback(p.PacketID)
	sub.ExpectNothing(t, nothing)
	reads.await(t, "read sub device-cn-42 private/live")
}

// readFilter allows every publish and subscribe and refuses reading under deny.
type readFilter struct {
	deny  string
	reads *events
}

func (readFilter) CanPublish(*mqtt.Client, string) bool   { return true }
func (readFilter) CanSubscribe(*mqtt.Client, string) bool { return true }
func (r readFilter) CanRead(clientID, username, topic string) bool {
	r.reads.add("read %s %s %s", clientID, username, topic)
	return !strings.HasPrefix(topic, r.deny)
}

func TestEvents(t *testing.T) {
	ev := &events{}
	b := mqtttest.StartBroker(t, mqtttest.WithMaxQueued(1), mqtttest.WithOptions(func(o *mqtt.Options) {
		o.Events.Connect = func(c *mqtt.Client, present bool) {
			ev.add("connect %s v%d present=%v", c.ID, c.ProtocolVersion, present)
		}
		o.Events.Disconnect = func(c *mqtt.Client, d mqtt.Disconnect) {
			ev.add("disconnect %s byClient=%v reason=%s", c.ID, d.ByClient, d.Reason)
		}
		o.Events.Subscribe = func(c *mqtt.Client, filters []string, codes []mqtt.ReasonCode) {
			ev.add("subscribe %s %v %v", c.ID, filters, codes)
		}
		o.Events.Drop = func(clientID, topic string, why mqtt.DropReason) { ev.add("drop %s %s %s", clientID, topic, why) }
		o.QueueFull = mqtt.QueueFullDropNew // the default refuses instead of dropping
	}))
	sub, _ := connectDurable(t, b, v5, "sub")
	sub.SubscribeOK(t, 1, "t", 1)
	sub.Disconnect(t)
	ev.await(t, "connect sub v5 present=false")
	ev.await(t, "subscribe sub [t] [Granted QoS 1]")
	ev.await(t, "disconnect sub byClient=true reason=Success")

	pub := connectClean(t, b, v311, "pub")
	publishQoS1(t, pub, "t", 1, "fits")
	publishQoS1(t, pub, "t", 2, "overflows") // the offline session's queue holds 1
	ev.await(t, "drop sub t queue-full")
	pub.Drop(t)
	ev.await(t, "disconnect pub byClient=false reason=Success")
}

// A Will the Authorizer would not let its client publish refuses the CONNECT with Not authorized
// (3.1.1: 0x05), so that a Will cannot write where its client may not; an allowed Will connects.
func TestAuthorizerRefusesWill(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t, mqtttest.WithOptions(func(o *mqtt.Options) { o.Authorizer = denyPrefix{prefix: "secret/"} }))
		want := byte(0x87)
		if v == v311 {
			want = 0x05
		}
		c := b.Dial(t, v)
		c.SendConnect("w", true, 0, mqtttest.Will("secret/lwt", []byte("gone"), 1, false))
		if ack := c.Expect(t, packets.Connack); ack.ReasonCode != want {
			t.Errorf("Will on secret/lwt: CONNACK 0x%02X, want 0x%02X", ack.ReasonCode, want)
		}
		c.ExpectClosed(t)
		ok := b.Dial(t, v)
		ok.Connect(t, "w", true, 0, mqtttest.Will("public/lwt", []byte("gone"), 1, false))
	})
}

// A client id's session belongs to the user that created it: a CONNECT with that client id as
// another user, or without credentials, is refused with Not authorized (3.1.1: 0x05) and the
// owner's connection stays; the owner reconnects as usual.
func TestClientIDOwnedByAnotherUserIsRefused(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t, mqtttest.WithOptions(func(o *mqtt.Options) {
			o.Authenticator = anyone{}
		}))
		want := byte(0x87)
		if v == v311 {
			want = 0x05
		}
		owner, _ := connectDurable(t, b, v, "dev", credentials("alice", "x"))
		owner.SubscribeOK(t, 1, "t", 1)
		for _, opts := range [][]mqtttest.ConnectOption{{credentials("mallory", "x")}, nil} {
			thief := b.Dial(t, v)
			thief.SendConnect("dev", false, expiry, opts...)
			if ack := thief.Expect(t, packets.Connack); ack.ReasonCode != want || ack.SessionPresent {
				t.Errorf("CONNECT as another user: CONNACK 0x%02X present=%t, want 0x%02X, 0", ack.ReasonCode, ack.SessionPresent, want)
			}
			thief.ExpectClosed(t)
		}
		owner.Ping(t) // not taken over
		owner.Drop(t)
		resume(t, b, v, "dev", credentials("alice", "x"))
	})
}

// anyone is an Authenticator that accepts every client as the username it sent.
type anyone struct{}

func (anyone) Authenticate(_ context.Context, req *mqtt.ConnectRequest) (string, error) {
	return req.Username, nil
}
