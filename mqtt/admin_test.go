package mqtt_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt"
	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

// Session shows a session's in-flight ids both ways, its queue and its subscriptions; DeleteSession
// disconnects its client (DISCONNECT 0x98, Administrative action), removes it in a commit, and
// the client's next CONNECT gets Session Present 0 [MQTT-3.2.2-2].
func TestDeleteSessionWithInFlightIDs(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t)
	sub, _ := connectDurable(t, b, v5, "sub", mqtttest.ReceiveMaximum(1))
	sub.SubscribeOK(t, 1, "t", 2)
	sub.Publish("from-sub", 2, 9, []byte("x"), false) // PUBREC'd, no PUBREL: inbound id 9 awaits it
	sub.ExpectID(t, packets.Pubrec, 9)
	pub := connectClean(t, b, v5, "pub")
	publishQoS2(t, pub, "t", 1, "one") // in flight to sub, which holds back its PUBREC
	publishQoS2(t, pub, "t", 2, "two") // queued behind Receive Maximum 1
	one := sub.ExpectPublish(t, "t", 2, "one")

	srv := b.Server()
	got, ok := srv.Session("sub")
	if !ok {
		t.Fatal(`Session("sub"): not found`)
	}
	want := mqtt.SessionInfo{ClientID: "sub", Online: true, ExpiryInterval: expiry,
		Subscriptions:         []mqtt.Subscription{{Filter: "t", QoS: 2}},
		InboundAwaitingPubrel: []uint16{9},
		OutboundInFlight:      []mqtt.OutboundInFlight{{PacketID: one.PacketID, QoS: 2, State: "publish-sent"}},
		Queued:                1, QueuedBytes: 3}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Session(sub) = %+v\nwant %+v", got, want)
	}
	if ids := clientIDs(srv.Sessions()); !reflect.DeepEqual(ids, []string{"pub", "sub"}) {
		t.Fatalf("Sessions() = %v, want [pub sub]", ids)
	}

	if err := srv.DeleteSession(context.Background(), "sub"); err != nil {
		t.Fatal(err)
	}
	sub.ExpectDisconnect(t, 0x98)
	if _, ok := srv.Session("sub"); ok {
		t.Fatal("the session is still there after DeleteSession")
	}
	if err := srv.DeleteSession(context.Background(), "sub"); !errors.Is(err, mqtt.ErrNoSession) {
		t.Fatalf("DeleteSession of a deleted session = %v, want ErrNoSession", err)
	}
	b.Restart(t) // the removal was committed: it holds after a restart too
	again, ack := connectDurable(t, b, v5, "sub")
	if ack.SessionPresent {
		t.Fatal("CONNACK Session Present 1 after the session was deleted, want 0")
	}
	again.ExpectNothing(t, nothing) // neither "one" nor "two": they went with the session
}

func clientIDs(infos []mqtt.SessionInfo) []string {
	var ids []string
	for _, in := range infos {
		ids = append(ids, in.ClientID)
	}
	return ids
}
