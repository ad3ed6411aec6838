package mqtt_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/oncemq/oncemq/mqtt"
)

// Embed a broker, subscribe to it with paho.golang, and publish at QoS 2 from the program itself.
func Example() {
	dir, err := os.MkdirTemp("", "oncemq-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	srv, err := mqtt.New(mqtt.Options{DataDir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err) // a damaged or locked state file stops here
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	received := make(chan string, 1)
	client := paho.NewClient(paho.ClientConfig{
		Conn: conn,
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){
			func(pr paho.PublishReceived) (bool, error) {
				received <- fmt.Sprintf("%s %s (QoS %d)", pr.Packet.Topic, pr.Packet.Payload, pr.Packet.QoS)
				return true, nil
			},
		},
	})
	if _, err := client.Connect(ctx, &paho.Connect{ClientID: "example-subscriber", CleanStart: true, KeepAlive: 30}); err != nil {
		log.Fatal(err)
	}
	defer client.Disconnect(&paho.Disconnect{})
	sub := &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "sensors/#", QoS: 2}}}
	if _, err := client.Subscribe(ctx, sub); err != nil {
		log.Fatal(err)
	}

	// Publish returns once the message and its delivery to the subscriber's session are committed:
	// from here on it survives a crash of the broker.
	if err := srv.Publish(ctx, mqtt.Message{Topic: "sensors/kitchen", Payload: []byte("21.5"), QoS: 2}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-received)
	// Output: sensors/kitchen 21.5 (QoS 2)
}
