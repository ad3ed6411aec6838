package mqtt

import (
	"fmt"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/session"
	"github.com/oncemq/oncemq/session/reason"
)

// applyConnectLimits holds a valid CONNECT to the broker's limits before the session is touched:
// connections over Options.MaxConnections and Wills over Options.MaxWillSize are refused (5.0
// CONNACK 0x97, 3.1.1 0x03); the Keep Alive is capped by Options.MaxKeepAlive (5.0: Server Keep
// Alive in CONNACK [MQTT-3.2.2-21]; 3.1.1, which cannot be told, CONNACK 0x02 as mosquitto does);
// the Session Expiry Interval is capped by Options.MaxSessionExpiry (5.0: told in CONNACK).
func (c *conn) applyConnectLimits(pk *packets.Packet, req *session.ConnectRequest, props *packets.Properties) error {
	o := &c.srv.opts
	if c.overLimit {
		c.refuseConnect(reason.QuotaExceeded, fmt.Errorf("more than %d connections", o.MaxConnections))
		return errConnectRefused
	}
	if n := willSize(&pk.Connect); n > o.MaxWillSize {
		c.refuseConnect(reason.QuotaExceeded, fmt.Errorf("will of %d bytes, the maximum is %d", n, o.MaxWillSize))
		return errConnectRefused
	}
	if ka := int(pk.Connect.Keepalive); o.MaxKeepAlive > 0 && (ka == 0 || ka > o.MaxKeepAlive) {
		if c.version == 4 {
			c.refuseConnect(reason.ClientIdentifierNotValid, fmt.Errorf("keep alive %d s, the maximum is %d s", ka, o.MaxKeepAlive))
			return errConnectRefused
		}
		props.ServerKeepAlive, props.ServerKeepAliveFlag = uint16(o.MaxKeepAlive), true
		keepAlive := time.Duration(o.MaxKeepAlive) * time.Second
		c.keepAlive = keepAlive + keepAlive/2 // [MQTT-3.1.2-22]
	}
	if cap := o.MaxSessionExpiry; cap > 0 && req.ExpiryInterval > cap {
		req.ExpiryInterval = cap
		if c.version == 5 {
			props.SessionExpiryInterval, props.SessionExpiryIntervalFlag = cap, true
		}
	}
	return nil
}

// capExpiry is the Session Expiry Interval a DISCONNECT sets, within Options.MaxSessionExpiry.
func (c *conn) capExpiry(v uint32) uint32 {
	if cap := c.srv.opts.MaxSessionExpiry; cap > 0 && v > cap {
		return cap
	}
	return v
}

// willSize is the bytes a Will Message holds in memory and in the store.
func willSize(cp *packets.ConnectParams) int {
	if !cp.WillFlag {
		return 0
	}
	wp := &cp.WillProperties
	n := len(cp.WillTopic) + len(cp.WillPayload) + len(wp.ContentType) + len(wp.ResponseTopic) + len(wp.CorrelationData)
	for _, u := range wp.User {
		n += len(u.Key) + len(u.Val)
	}
	return n
}
