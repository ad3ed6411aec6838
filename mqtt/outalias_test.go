package mqtt_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

func topicAliasMaximum(n uint16) mqtttest.ConnectOption {
	return func(pk *packets.Packet) { pk.Properties.TopicAliasMaximum = n }
}

// [MQTT-3.1.2-26] [MQTT-3.1.2-27] [MQTT-3.3.2-8] (E10): the broker assigns outgoing topic aliases
// 1 up to the client's Topic Alias Maximum, first with the topic and then with an empty topic, and
// none to a client that allows none. [MQTT-3.3.2-7] (C17): aliases end with the connection; a
// PUBLISH resent after a reconnect carries its topic.
func TestOutgoingTopicAliases_MQTT_3_1_2_26(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t)
	sub, _ := connectDurable(t, b, v5, "aliased", topicAliasMaximum(2))
	sub.SubscribeOK(t, 1, "al/#", 1)
	plain := connectClean(t, b, v5, "plain")
	plain.SubscribeOK(t, 1, "al/#", 0)
	pub := connectClean(t, b, v5, "pub")
	sent := []string{"al/a", "al/a", "al/b", "al/c", "al/a"}
	for i, topic := range sent {
		publishQoS1(t, pub, topic, uint16(i+1), fmt.Sprint(i))
	}
	want := []struct {
		topic string
		alias uint16
	}{{"al/a", 1}, {"", 1}, {"al/b", 2}, {"al/c", 0}, {"", 1}}
	for i, w := range want {
		p := sub.Expect(t, packets.Publish)
		if p.TopicName != w.topic || p.Properties.TopicAlias != w.alias || string(p.Payload) != fmt.Sprint(i) {
			t.Fatalf("delivery %d: topic %q alias %d payload %q, want topic %q alias %d payload %q",
				i, p.TopicName, p.Properties.TopicAlias, p.Payload, w.topic, w.alias, fmt.Sprint(i))
		}
		if i < 3 {
			sub.Puback(p.PacketID)
		}
	}
	for i, topic := range sent {
		p := plain.Expect(t, packets.Publish)
		if p.TopicName != topic || p.Properties.TopicAlias != 0 {
			t.Fatalf("client without Topic Alias Maximum, delivery %d: topic %q alias %d, want %q and none", i, p.TopicName, p.Properties.TopicAlias, topic)
		}
	}

	// The last two were not acknowledged: resent on the next connection with their topics.
	sub.Drop(t)
	sub = resume(t, b, v5, "aliased", topicAliasMaximum(2))
	for _, topic := range []string{"al/c", "al/a"} {
		p := sub.Expect(t, packets.Publish)
		if !p.FixedHeader.Dup || p.TopicName != topic || p.Properties.TopicAlias != 0 {
			t.Fatalf("resend: DUP %v topic %q alias %d, want DUP, topic %q, no alias", p.FixedHeader.Dup, p.TopicName, p.Properties.TopicAlias, topic)
		}
		sub.Puback(p.PacketID)
	}
	// A new message on the new connection starts the aliases again.
	publishQoS1(t, pub, "al/a", 9, "new")
	if p := sub.ExpectPublish(t, "al/a", 1, "new"); p.Properties.TopicAlias != 1 {
		t.Fatalf("first PUBLISH on the new connection: alias %d, want 1 with its topic", p.Properties.TopicAlias)
	}
}

// paho.golang, whose router resolves the aliases the broker sends, routes every message to the
// handler of its topic, each sent with an alias.
func TestOutgoingTopicAliasesPaho(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t)
	got := make(chan string, 10)
	nc, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	// paho's StandardRouter is what resolves the aliases a server sends: it calls the handler of
	// the topic the alias stands for (the message it passes keeps the empty topic).
	router := paho.NewStandardRouterWithDefault(func(p *paho.Publish) { got <- "unrouted=" + string(p.Payload) })
	for _, topic := range []string{"pa/x", "pa/y"} {
		router.RegisterHandler(topic, func(p *paho.Publish) { got <- topic + "=" + string(p.Payload) })
	}
	sub := paho.NewClient(paho.ClientConfig{ClientID: "paho-aliased", Conn: nc,
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
			if pr.Packet.Properties == nil || pr.Packet.Properties.TopicAlias == nil {
				t.Errorf("paho received %s=%s without a topic alias", pr.Packet.Topic, pr.Packet.Payload)
			}
			router.Route(pr.Packet.Packet())
			return true, nil
		}}})
	ctx, cancel := context.WithTimeout(context.Background(), mqtttest.ExpectTimeout)
	defer cancel()
	if _, err := sub.Connect(ctx, &paho.Connect{ClientID: "paho-aliased", CleanStart: true,
		Properties: &paho.ConnectProperties{TopicAliasMaximum: ptr(uint16(10))}}); err != nil {
		t.Fatalf("paho connect: %v", err)
	}
	defer sub.Disconnect(&paho.Disconnect{})
	if _, err := sub.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "pa/#", QoS: 1}}}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	pub := connectClean(t, b, v5, "pub")
	sent := []string{"pa/x=0", "pa/x=1", "pa/y=2", "pa/x=3"}
	for i, s := range sent {
		topic := s[:4]
		publishQoS1(t, pub, topic, uint16(i+1), s[5:])
	}
	for _, want := range sent {
		select {
		case g := <-got:
			if g != want {
				t.Fatalf("paho received %q, want %q", g, want)
			}
		case <-time.After(mqtttest.ExpectTimeout):
			t.Fatalf("paho received nothing, want %q", want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// A new alias adds 3 bytes: a message that fits the client's Maximum Packet Size only without
// them is delivered without an alias, not dropped [MQTT-3.1.2-24].
func TestOutgoingTopicAliasWithinMaximumPacketSize(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t)
	full, err := mqtttest.Encode(mqtttest.PublishPacket("mp/t", 1, 1, []byte("payload"), false), v5)
	if err != nil {
		t.Fatal(err)
	}
	sub := connectClean(t, b, v5, "tight", topicAliasMaximum(5), mqtttest.MaximumPacketSize(uint32(len(full))))
	sub.SubscribeOK(t, 1, "mp/#", 1)
	pub := connectClean(t, b, v5, "pub")
	publishQoS1(t, pub, "mp/t", 1, "payload")
	if p := sub.ExpectPublish(t, "mp/t", 1, "payload"); p.Properties.TopicAlias != 0 {
		t.Fatalf("alias %d on a packet that fits only without one", p.Properties.TopicAlias)
	}
	// A smaller message on another topic still gets an alias: the first one was not spent.
	publishQoS1(t, pub, "mp/u", 2, "p")
	if p := sub.ExpectPublish(t, "mp/u", 1, "p"); p.Properties.TopicAlias != 1 {
		t.Fatalf("alias %d, want 1", p.Properties.TopicAlias)
	}
}
