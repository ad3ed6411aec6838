package main

import (
	"fmt"
	"slices"
	"testing"
)

// mosquitto_pub -i device -D publish user-property dedup-id X, run twice (two processes, so two
// sessions with Clean Start and packet id 1 each; the same client id, since ids are keyed by it),
// is delivered once, at QoS 1 and 2; a sentinel published last
// with another id is the subscriber's second and last message. With --dedup-max 0 the copy is
// delivered again.
func TestInteropMosquittoDedupID(t *testing.T) {
	requireMosquitto(t)
	t.Parallel()
	for _, tc := range []struct {
		name  string
		args  []string
		twice bool
	}{{"on", nil, false}, {"off", []string{"--dedup-max", "0"}, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, t.TempDir(), nil, tc.args...)
			for _, qos := range []string{"1", "2"} {
				topic := "interop/dedup/qos" + qos
				n := 2
				if tc.twice {
					n = 3
				}
				sub := startMosquittoSub(t, b, "mqttv5", "-i", "sub-dedup-"+qos, "-q", "2", "-t", topic,
					"-C", fmt.Sprint(n), "-W", fmt.Sprint(mosquittoTimeout))
				for range 2 {
					mosquittoPub(t, b, "mqttv5", "-i", "device", "-q", qos, "-t", topic, "-m", "reading",
						"-D", "publish", "user-property", "dedup-id", "r-"+qos)
				}
				mosquittoPub(t, b, "mqttv5", "-i", "device", "-q", qos, "-t", topic, "-m", "sentinel",
					"-D", "publish", "user-property", "dedup-id", "s-"+qos)
				reading := mqttMessage{QoS: qos, Retain: "0", Topic: topic, Payload: "reading"}
				want := []mqttMessage{reading, {QoS: qos, Retain: "0", Topic: topic, Payload: "sentinel"}}
				if tc.twice {
					want = slices.Insert(want, 0, reading)
				}
				if got := sub.wait(t); !slices.Equal(got, want) {
					t.Fatalf("qos %s: mosquitto_sub received %v, want %v", qos, got, want)
				}
			}
		})
	}
}
