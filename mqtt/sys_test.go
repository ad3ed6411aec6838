package mqtt_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
	bolt "go.etcd.io/bbolt"

	"github.com/oncemq/oncemq/mqtt"
	"github.com/oncemq/oncemq/mqtt/mqtttest"
	"github.com/oncemq/oncemq/session/reason"
)

// sysEvery is the $SYS interval of these tests: short, so that a few updates come quickly.
const sysEvery = 20 * time.Millisecond

// nextValue reads PUBLISHes on c until one on topicName arrives, and returns its payload and
// retain flag; other topics are skipped. It fails after bounded reads.
func nextValue(t *testing.T, c *mqtttest.Client, topicName string) (string, bool) {
	t.Helper()
	for range 1000 {
		pk := c.Expect(t, packets.Publish)
		if pk.TopicName == topicName {
			return string(pk.Payload), pk.FixedHeader.Retain
		}
	}
	t.Fatalf("no PUBLISH on %s", topicName)
	return "", false
}

// subscribeSys subscribes c to filter and waits for the SUBACK. $SYS updates may come first: a
// server may send matching PUBLISHes before the SUBACK (§3.8.4).
func subscribeSys(t *testing.T, c *mqtttest.Client, filter string) {
	t.Helper()
	c.Subscribe(1, filter, 2)
	for range 1000 {
		r, ok := c.Next(mqtttest.ExpectTimeout)
		if !ok || r.Err != nil {
			t.Fatalf("waiting for the SUBACK of %s: timeout or %v", filter, r.Err)
		}
		if r.Packet.FixedHeader.Type == packets.Suback {
			return
		}
	}
	t.Fatalf("no SUBACK for %s", filter)
}

// A new subscriber gets the latest $SYS value at once, as a retained QoS 0 message, and later
// updates follow the clients' count as clients come.
func TestSysClientsConnected(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t, mqtttest.WithOptions(func(o *mqtt.Options) { o.SysInterval = time.Hour }))
	const topicName = "$SYS/broker/clients/connected"
	watcher := connectClean(t, b, v5, "watcher")
	watcher.SubscribeOK(t, 1, topicName, 1)
	// Published once at start, before anyone connected: retained, so it comes at once.
	if v, retain := nextValue(t, watcher, topicName); v != "0" || !retain {
		t.Fatalf("retained %s = %q retain=%t, want \"0\" retained [MQTT-3.3.1-9]", topicName, v, retain)
	}

	b2 := mqtttest.StartBroker(t, mqtttest.WithOptions(func(o *mqtt.Options) { o.SysInterval = sysEvery }))
	w2 := connectClean(t, b2, v311, "watcher")
	subscribeSys(t, w2, topicName)
	connectClean(t, b2, v5, "second")
	for i := 0; ; i++ {
		v, _ := nextValue(t, w2, topicName)
		if v == "2" {
			break
		}
		if i == 500 {
			t.Fatalf("%s never reached 2; last %q", topicName, v)
		}
	}
}

// Publishing to $SYS is refused as an Authorizer refusal is: 5.0 gets PUBACK or PUBREC 0x87, 3.1.1,
// which has no refusal code, is acknowledged; nothing is routed or retained. A Will on $SYS refuses the CONNECT, and
// Server.Publish refuses the topic.
func TestSysPublishRefused(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		b := mqtttest.StartBroker(t, mqtttest.WithOptions(func(o *mqtt.Options) { o.SysInterval = -1 }))
		sub := connectClean(t, b, v5, "sub")
		sub.SubscribeOK(t, 1, "$SYS/#", 2)
		pub := connectClean(t, b, v, "pub")
		pub.PublishRetained("$SYS/broker/uptime", 1, 1, []byte("forged"))
		if v == v5 {
			pub.ExpectAck(t, packets.Puback, 1, byte(reason.NotAuthorized))
			pub.Publish("$SYS/broker/version", 2, 2, []byte("forged"), false)
			pub.ExpectAck(t, packets.Pubrec, 2, byte(reason.NotAuthorized))
		} else {
			pub.ExpectAck(t, packets.Puback, 1, 0)
		}
		sub.ExpectNothing(t, nothing)
		if n := b.Server().Stats().Retained; n != 0 {
			t.Errorf("retained messages = %d, want 0", n)
		}

		c := b.Dial(t, v)
		c.SendConnect("willer", true, 0, mqtttest.Will("$SYS/broker/clients/connected", []byte("x"), 0, true))
		ack := c.Expect(t, packets.Connack)
		if want := byte(reason.NotAuthorized); v == v311 {
			if ack.ReasonCode != 0x05 {
				t.Errorf("CONNACK with a $SYS Will: return code 0x%02X, want 0x05", ack.ReasonCode)
			}
		} else if ack.ReasonCode != want {
			t.Errorf("CONNACK with a $SYS Will: 0x%02X, want 0x%02X", ack.ReasonCode, want)
		}

		err := b.Server().Publish(context.Background(), mqtt.Message{Topic: "$SYS/broker/x", Payload: []byte("x"), QoS: 1})
		if !errors.Is(err, mqtt.ErrInvalidMessage) {
			t.Errorf("Server.Publish to $SYS: %v, want ErrInvalidMessage", err)
		}
	}, v311, v5)
}

// $SYS costs no commit and nothing about it reaches the state file: with subscribers online and
// offline, many updates leave the commit count where it was, and the file holds no $SYS topic.
func TestSysNeverReachesTheJournal(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t, mqtttest.WithOptions(func(o *mqtt.Options) { o.SysInterval = sysEvery }))
	off, _ := connectDurable(t, b, v5, "offline")
	subscribeSys(t, off, "$SYS/#")
	off.Send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Disconnect}})
	off.Close()
	for i := 0; b.Server().Stats().SessionsOnline != 0; i++ {
		if i == 1000 {
			t.Fatalf("the session never went offline")
		}
		time.Sleep(time.Millisecond)
	}
	on, _ := connectDurable(t, b, v311, "online")
	subscribeSys(t, on, "$SYS/#") // its SUBACK follows every commit before it
	before := b.Server().Stats().Commits
	for range 5 { // five updates, each a new uptime or load value
		nextValue(t, on, "$SYS/broker/store/commits")
	}
	if after := b.Server().Stats().Commits; after != before {
		t.Errorf("commits went from %d to %d while only $SYS was published", before, after)
	}
	if q := b.Server().Stats().Queued; q != 0 {
		t.Errorf("queued = %d, want 0: $SYS is QoS 0 and never queued for an offline session", q)
	}
	b.Stop(t)
	if hits := fileMentions(t, filepath.Join(b.Dir, mqtt.DataFile), "$SYS/broker/"); len(hits) > 0 {
		t.Errorf("the state file holds $SYS topics: %q", hits)
	}
}

// fileMentions lists the bucket/key of every record of the bbolt file at path whose key or value
// contains s.
func fileMentions(t *testing.T, path, s string) []string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer db.Close()
	var hits []string
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			return bk.ForEach(func(k, v []byte) error {
				if bytes.Contains(k, []byte(s)) || bytes.Contains(v, []byte(s)) {
					hits = append(hits, string(name)+"/"+string(k))
				}
				return nil
			})
		})
	})
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return hits
}
