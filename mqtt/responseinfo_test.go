package mqtt_test

import (
	"context"
	"net"
	"testing"

	"github.com/eclipse/paho.golang/paho"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt"
	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

// A 5.0 client that sets Request Response Information to 1 gets Response Information in CONNACK:
// the response topic prefix, its client id and "/"; one that does not ask gets none
// [MQTT-3.1.2-28].
func TestResponseInformation_MQTT_3_1_2_28(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t, mqtttest.WithOptions(func(o *mqtt.Options) { o.ResponseTopicPrefix = "rsp/" }))

	asks := b.Dial(t, v5)
	ack := asks.Connect(t, "asker", true, 0, func(pk *packets.Packet) { pk.Properties.RequestResponseInfo = 1 })
	if got, want := ack.Properties.ResponseInfo, "rsp/asker/"; got != want {
		t.Fatalf("CONNACK Response Information %q, want %q", got, want)
	}
	for _, rri := range []byte{0, 255} { // 255: absent
		c := b.Dial(t, v5)
		ack := c.Connect(t, "quiet", true, 0, func(pk *packets.Packet) {
			if rri != 255 {
				pk.Properties.RequestResponseInfo = rri
			}
		})
		if ack.Properties.ResponseInfo != "" {
			t.Fatalf("Request Response Information %d: CONNACK has Response Information %q, want none", rri, ack.Properties.ResponseInfo)
		}
		c.Close()
	}

	// paho.golang, with the default prefix.
	def := mqtttest.StartBroker(t)
	nc, err := net.Dial("tcp", def.Addr())
	if err != nil {
		t.Fatal(err)
	}
	pc := paho.NewClient(paho.ClientConfig{ClientID: "paho-asker", Conn: nc})
	ctx, cancel := context.WithTimeout(context.Background(), mqtttest.ExpectTimeout)
	defer cancel()
	pack, err := pc.Connect(ctx, &paho.Connect{ClientID: "paho-asker", CleanStart: true,
		Properties: &paho.ConnectProperties{RequestResponseInfo: true}})
	if err != nil {
		t.Fatalf("paho connect: %v", err)
	}
	defer pc.Disconnect(&paho.Disconnect{})
	if pack.Properties == nil || pack.Properties.ResponseInfo != "reply/paho-asker/" {
		t.Fatalf("paho CONNACK properties %+v, want Response Information %q", pack.Properties, "reply/paho-asker/")
	}
}
