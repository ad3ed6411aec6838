package mqtt_test

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/mqtt"
	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

// A store that fails is never answered with an acknowledgement (DESIGN §1, checklist B3): the
// PUBLISH whose commit failed gets no PUBREC and its connection is closed (5.0: DISCONNECT 0x80);
// later QoS 1/2 PUBLISHes are refused with 0x80 in 5.0, and close the connection in 3.1.1, which
// has no way to refuse; a resend of the failed id is not acknowledged either. QoS 0 still flows.
func TestStoreFailureRefusesQoS12(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v byte) {
		var failing atomic.Bool
		b := mqtttest.StartBroker(t, mqtttest.WithConfig(func(c *mqtt.Config) {
			c.FailCommit = func() error {
				if failing.Load() {
					return errors.New("injected: disk gone")
				}
				return nil
			}
		}))
		b.ShutdownErrorExpected = func(err error) bool { return errors.Is(err, inflight.ErrFailed) }
		watcher, _ := connectDurable(t, b, v, "watcher")
		watcher.SubscribeOK(t, 1, "fail/#", 2)
		first, _ := connectDurable(t, b, v, "first")
		second, _ := connectDurable(t, b, v, "second")
		failing.Store(true)

		// A resend right behind it may find the id in the in-memory table before the failure is
		// known; it must not be acknowledged either (session.Publish closes instead). Which way
		// the timing falls is not controlled here.
		first.Publish("fail/a", 2, 1, []byte("lost?"), false)
		first.Publish("fail/a", 2, 1, []byte("lost?"), true)
		first.ExpectDisconnect(t, 0x80)
		watcher.ExpectNothing(t, nothing)

		if v == v5 {
			second.Publish("fail/b", 1, 2, []byte("x"), false)
			second.ExpectAck(t, packets.Puback, 2, 0x80)
			second.Publish("fail/c", 2, 3, []byte("x"), false)
			second.ExpectAck(t, packets.Pubrec, 3, 0x80)
			second.Publish("fail/d", 0, 0, []byte("qos0"), false)
			watcher.ExpectPublish(t, "fail/d", 0, "qos0")
		} else {
			second.Publish("fail/b", 1, 2, []byte("x"), false)
			second.ExpectClosed(t)
		}
		watcher.ExpectNothing(t, nothing)
	})
}
