package torture

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/cmd/oncemq/internal/mqttclient"
)

// The torture's clients keep their MQTT session state in the torture process, which never dies, so
// that it survives every connection: this is what an exactly-once client must do [MQTT-4.1.0-1].
// They speak MQTT 5.0 with Clean Start 0 and a Session Expiry Interval on every reconnect, expect
// Session Present 1, and resend what is unacknowledged with the same packet identifiers
// [MQTT-4.4.0-1].

const (
	tortureSessionExpiry = 3600 // seconds: longer than any run
	tortureTopicPrefix   = "torture/p"
	tortureFilter        = "torture/#"
	tortureConnectWait   = 10 * time.Second // from CONNECT to CONNACK
	tortureDialWait      = 2 * time.Second
	backoffMin           = 20 * time.Millisecond
	backoffMax           = 500 * time.Millisecond
	maxErrorSamples      = 10
)

// backoff spaces reconnection attempts: 20ms doubling to 500ms, with jitter.
type backoff struct {
	d   time.Duration
	rng *rand.Rand
}

// wait sleeps for the next delay; false if ctx ended first.
func (b *backoff) wait(ctx context.Context) bool {
	b.d = min(max(2*b.d, backoffMin), backoffMax)
	d := b.d/2 + time.Duration(b.rng.Int64N(int64(b.d/2)+1))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (b *backoff) reset() { b.d = 0 }

// dialConnect opens a connection and sends CONNECT; it returns the CONNACK.
func dialConnect(ctx context.Context, addr string, o mqttclient.ConnectOptions) (*mqttclient.Conn, packets.Packet, error) {
	c, err := mqttclient.Dial(ctx, addr, tortureDialWait)
	if err != nil {
		return nil, packets.Packet{}, err
	}
	ack, err := c.Connect(o, tortureConnectWait)
	if err != nil {
		c.Close()
		return nil, ack, err
	}
	return c, ack, nil
}

// readResult is one packet read by a connection's reader goroutine, or the error that ended it.
type readResult struct {
	pk  packets.Packet
	err error
}

// clientEnv is what the clients need from the torture run.
type clientEnv struct {
	addr     string
	start    time.Time
	progress func()     // one more message acknowledged to a publisher or counted by a subscriber
	run      func() int // the broker's current run number
}
