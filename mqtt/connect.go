package mqtt

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/mqtt/internal/wire"
	"github.com/oncemq/oncemq/session"
	"github.com/oncemq/oncemq/session/topic"
)

// errConnectRefused: CONNACK with a failure code was sent; the connection closes without more.
var errConnectRefused = errors.New("connect refused")

// connect reads and handles the first packet, which must be CONNECT [MQTT-3.1.0-1]; anything else
// closes the connection without a word. On success c.sess holds the session.
func (c *conn) connect() error {
	_ = c.nc.SetReadDeadline(time.Now().Add(c.srv.cfg.ConnectTimeout))
	c.acquireReader()
	hb, err := c.br.ReadByte()
	if err != nil {
		return err
	}
	if hb>>4 != packets.Connect {
		return protocolViolation("first packet is not CONNECT")
	}
	pk, body, err := wire.ReadFrame(hb, c.br, 0, c.srv.cfg.MaxPacketSize)
	if errors.Is(err, wire.ErrTooLarge) {
		return &protocolError{code: 0x95, msg: err.Error()}
	}
	if err != nil {
		return err
	}
	level, ok := connectLevel(body)
	if ok && level != 4 && level != 5 {
		// Unsupported protocol level: 0x84 in 5.0's format, 0x01 in 3.1.1's [MQTT-3.1.2-2].
		c.version = 4
		code := byte(0x01)
		if level > 5 {
			c.version, code = 5, 0x84
		}
		c.sendConnack(code, false, packets.Properties{})
		return errConnectRefused
	}
	c.version = 4
	if level == 5 {
		c.version = 5 // from here on a malformed CONNECT is answered in 5.0's format [MQTT-3.1.4-1]
	}
	if err := checkAndDecode(&pk, body, c.version); err != nil {
		return err
	}
	if code := pk.ConnectValidate(); code != packets.CodeSuccess {
		return &protocolError{code: code.Code, msg: "invalid CONNECT: " + code.Reason}
	}
	if !pk.Connect.WillFlag && pk.Connect.WillQos != 0 {
		return malformed("invalid CONNECT: Will QoS without the Will Flag") // [MQTT-3.1.2-11]; the codec misses it
	}
	cp := pk.Connect
	if pk.Properties.AuthenticationMethod != "" {
		c.sendConnack(0x8C, false, packets.Properties{}) // no enhanced authentication methods
		return errConnectRefused
	}
	var props packets.Properties
	clientID := cp.ClientIdentifier
	if clientID == "" {
		if c.version == 4 && !cp.Clean { // [MQTT-3.1.3-8]
			c.sendConnack(0x02, false, packets.Properties{})
			return errConnectRefused
		}
		clientID = newClientID()
		if c.version == 5 {
			props.AssignedClientID = clientID // [MQTT-3.2.2-16]
		}
	}
	req := session.ConnectRequest{
		ClientID:        clientID,
		ProtocolVersion: c.version,
		CleanStart:      cp.Clean,
		ReceiveMax:      pk.Properties.ReceiveMaximum,
		MaxPacketSize:   pk.Properties.MaximumPacketSize,
	}
	if c.version == 5 {
		req.ExpiryInterval = pk.Properties.SessionExpiryInterval
	} else if !cp.Clean {
		req.ExpiryInterval = session.NeverExpire // 3.1.1 persistent session: no expiry on the wire
	}
	if cp.WillFlag {
		if !topic.ValidName(cp.WillTopic) {
			return &protocolError{code: 0x90, msg: "invalid will topic"}
		}
		wp := cp.WillProperties
		req.Will = &inflight.Will{
			Message: &inflight.Message{Topic: cp.WillTopic, Payload: cp.WillPayload, QoS: cp.WillQos, Retain: cp.WillRetain,
				Properties: packets.Properties{PayloadFormat: wp.PayloadFormat, PayloadFormatFlag: wp.PayloadFormatFlag,
					MessageExpiryInterval: wp.MessageExpiryInterval, ContentType: wp.ContentType, ResponseTopic: wp.ResponseTopic,
					CorrelationData: wp.CorrelationData, User: wp.User}},
			Delay: wp.WillDelayInterval,
		}
	}
	c.clientID = clientID
	c.maxPacketSize = req.MaxPacketSize
	keepAlive := time.Duration(cp.Keepalive) * time.Second
	c.keepAlive = keepAlive + keepAlive/2 // [MQTT-3.1.2-22]

	if c.version == 5 {
		props.ReceiveMaximum = uint16(c.srv.cfg.ReceiveMaximum)
		props.MaximumPacketSize = uint32(c.srv.cfg.MaxPacketSize)
		props.TopicAliasMaximum = topicAliasMaximum
		props.SharedSubAvailable, props.SharedSubAvailableFlag = 0, true
	}
	acked := make(chan error, 1)
	c.sess = c.srv.broker.Connect(req, c, func(present bool, err error) {
		defer func() { acked <- err }()
		if err != nil {
			c.log().Error("connect not committed", slog.Any("err", err))
			code := byte(0x80)
			if c.version == 4 {
				code = 0x03 // server unavailable
			}
			c.sendConnack(code, false, packets.Properties{})
			c.Close(0)
			return
		}
		c.sendConnack(0x00, present, props)
	})
	// CONNACK must be the first packet sent [MQTT-3.2.0-1]: read nothing the client pipelined
	// behind its CONNECT before the CONNACK is queued, or a PINGRESP, or the DISCONNECT for a bad
	// packet, would overtake it.
	if err := <-acked; err != nil {
		return errConnectRefused
	}
	return nil
}

// sendConnack queues a CONNACK. A refusal always has Session Present 0 [MQTT-3.2.2-6].
func (c *conn) sendConnack(code byte, present bool, props packets.Properties) {
	c.Send(packets.Packet{
		FixedHeader:    packets.FixedHeader{Type: packets.Connack},
		ReasonCode:     code,
		SessionPresent: present && code == 0,
		Properties:     props,
	})
	if code != 0 {
		c.Close(0)
	}
}

// newClientID makes an Assigned Client Identifier for a 5.0 client that sent none.
func newClientID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "oncemq-" + hex.EncodeToString(b[:])
}
