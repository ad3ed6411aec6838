package mqtt_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/mqtt"
	"github.com/oncemq/oncemq/mqtt/mqtttest"
)

// One info line per connect, per disconnect and per refused connect, with what an operator needs to
// follow a client: who, from where, on which listener, how, and how it ended.
func TestConnectionLogLines(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t, mqtttest.WithOptions(func(o *mqtt.Options) {
		o.Authenticator = passwords{"alice": "secret"}
	}))
	c := b.Dial(t, v5)
	c.Connect(t, "logged", true, 0, credentials("alice", "secret"), mqtttest.KeepAlive(30))
	c.Disconnect(t)
	refused := b.Dial(t, v311)
	refused.SendConnect("intruder", true, 0, credentials("alice", "wrong"))
	refused.Expect(t, packets.Connack) // 3.1.1 return code 0x04
	refused.ExpectClosed(t)

	listener := regexp.QuoteMeta(b.Addr())
	awaitLog(t, b, `level=INFO msg="client connected" client=logged username=alice remote=127\.0\.0\.1:\d+ listener=`+listener+
		` protocol=5\.0 clean_start=true keep_alive=30 session_present=false`)
	awaitLog(t, b, `level=INFO msg="client disconnected" client=logged remote=127\.0\.0\.1:\d+ reason_code=0x00 `+
		`reason="Normal disconnection" closed_by=client duration=\d`)
	awaitLog(t, b, `level=INFO msg="connect refused" client=intruder remote=127\.0\.0\.1:\d+ listener=`+listener+
		` protocol=3\.1\.1 reason_code=0x86 reason="Bad User Name or Password"`)
}

// A client taken over is logged as closed by the broker with reason 0x8E.
func TestDisconnectLogNamesTheBrokerOnTakeover(t *testing.T) {
	t.Parallel()
	b := mqtttest.StartBroker(t)
	first := connectClean(t, b, v5, "twice")
	connectClean(t, b, v5, "twice")
	first.ExpectDisconnect(t, 0x8E)
	awaitLog(t, b, `msg="client disconnected" client=twice .*reason_code=0x8E reason="Session taken over" closed_by=broker`)
}

// awaitLog waits until a line of the broker's log matches pattern: the lines are written by the
// connection's goroutines, after the client saw its answer.
func awaitLog(t *testing.T, b *mqtttest.Broker, pattern string) {
	t.Helper()
	re := regexp.MustCompile(pattern)
	deadline := time.Now().Add(mqtttest.ExpectTimeout)
	for {
		for _, line := range strings.Split(b.Logs(), "\n") {
			if re.MatchString(line) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line matches %q", pattern)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
