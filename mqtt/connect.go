package mqtt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/mqtt/internal/wire"
	"github.com/oncemq/oncemq/session"
	"github.com/oncemq/oncemq/session/reason"
	"github.com/oncemq/oncemq/session/topic"
)

// errConnectRefused: CONNACK with a failure code was sent; the connection closes without more.
var errConnectRefused = errors.New("connect refused")

// handleConnect reads and handles the first packet, which must be CONNECT [MQTT-3.1.0-1]; anything
// else closes the connection without a word. The client is authenticated before the session is
// touched. On success c.sess holds the session.
func (c *conn) handleConnect() error {
	deadline := time.Now().Add(c.srv.opts.ConnectTimeout)
	_ = c.nc.SetReadDeadline(deadline)
	pk, err := c.readConnect()
	if err != nil {
		return err
	}
	req, props, err := c.connectRequest(&pk)
	if err != nil {
		return err
	}
	if err := c.applyConnectLimits(&pk, &req, &props); err != nil {
		return err
	}
	if c.eng, err = c.srv.engine(); err != nil {
		// The store failed: no session, not even one kept in memory only, is opened until it is
		// healed, so that every client sees the same answer and retries.
		c.refuseConnect(reason.ServerUnavailable, err)
		return errConnectRefused
	}
	if err := c.authenticate(deadline, &pk, &req); err != nil {
		return err
	}
	if err := c.authorizeWill(&req); err != nil {
		return err
	}
	req.Subscribes = c.readPipelinedSubscribes()
	return c.openSession(req, props)
}

// readConnect reads the CONNECT frame, answers an unsupported protocol level, and decodes and
// validates the packet in the client's version.
func (c *conn) readConnect() (packets.Packet, error) {
	c.acquireReader()
	hb, err := c.br.ReadByte()
	if err != nil {
		return packets.Packet{}, err
	}
	if hb>>4 != packets.Connect {
		return packets.Packet{}, protocolViolation("first packet is not CONNECT")
	}
	held := 0
	pk, body, err := wire.ReadFrameWith(hb, c.br, 0, c.srv.opts.MaxPacketSize, func(n int) error {
		if n < budgetFloor {
			return nil
		}
		if err := c.srv.readBudget.acquire(n, time.Now().Add(c.srv.opts.ConnectTimeout)); err != nil {
			return err
		}
		held = n
		return nil
	})
	if held > 0 {
		c.srv.readBudget.release(held) // the budget bounds what is being read, not what is kept
	}
	if errors.Is(err, wire.ErrTooLarge) {
		return pk, &protocolError{code: reason.PacketTooLarge, msg: err.Error()}
	}
	if err != nil {
		return pk, err
	}
	level, ok := connectLevel(body)
	if ok && level != 4 && level != 5 {
		// Unsupported protocol level: answered in 5.0's format to a later level, in 3.1.1's to an
		// earlier one [MQTT-3.1.2-2].
		c.version = 4
		if level > 5 {
			c.version = 5
		}
		c.refuseConnect(reason.UnsupportedProtocolVersion, nil)
		return pk, errConnectRefused
	}
	c.version = 4
	if level == 5 {
		c.version = 5 // from here on a malformed CONNECT is answered in 5.0's format [MQTT-3.1.4-1]
	}
	if err := checkAndDecode(&pk, body, c.version); err != nil {
		return pk, err
	}
	if code := pk.ConnectValidate(); code != packets.CodeSuccess {
		rc := reason.Code(code.Code)
		if code == packets.ErrProtocolViolationReservedBit || code == packets.ErrProtocolViolationQosOutOfRange {
			// The specification calls both a Malformed Packet; the codec says protocol error
			// [MQTT-3.1.2-3] [MQTT-3.1.2-12].
			rc = reason.MalformedPacket
		}
		return pk, &protocolError{code: rc, msg: "invalid CONNECT: " + code.Reason}
	}
	if !pk.Connect.WillFlag && pk.Connect.WillQos != 0 {
		return pk, malformed("invalid CONNECT: Will QoS without the Will Flag") // [MQTT-3.1.2-11]; the codec misses it
	}
	return pk, nil
}

// connectRequest turns a valid CONNECT into the session layer's request and the CONNACK
// properties, refusing what oncemq does not offer.
func (c *conn) connectRequest(pk *packets.Packet) (session.ConnectRequest, packets.Properties, error) {
	cp := &pk.Connect
	var props packets.Properties
	if pk.Properties.AuthenticationMethod != "" {
		c.refuseConnect(reason.BadAuthenticationMethod, nil) // no enhanced authentication methods
		return session.ConnectRequest{}, props, errConnectRefused
	}
	clientID := cp.ClientIdentifier
	if clientID == "" {
		if c.version == 4 && !cp.Clean { // [MQTT-3.1.3-8]
			c.refuseConnect(reason.ClientIdentifierNotValid, nil)
			return session.ConnectRequest{}, props, errConnectRefused
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
		req.NoProblemInfo = pk.Properties.RequestProblemInfoFlag && pk.Properties.RequestProblemInfo == 0
	} else if !cp.Clean {
		req.ExpiryInterval = session.NeverExpire // 3.1.1 persistent session: no expiry on the wire
	}
	if cp.WillFlag {
		if !topic.ValidName(cp.WillTopic) {
			return req, props, &protocolError{code: reason.TopicNameInvalid, msg: "invalid will topic"}
		}
		if isSys(cp.WillTopic) { // $SYS is the broker's own, and never stored
			c.refuseConnect(reason.NotAuthorized, nil)
			return session.ConnectRequest{}, props, errConnectRefused
		}
		req.Will = willOf(cp)
	}
	c.clientID = clientID
	c.maxPacketSize = req.MaxPacketSize
	c.keepAliveSecs, c.cleanStart = cp.Keepalive, cp.Clean
	keepAlive := time.Duration(cp.Keepalive) * time.Second
	c.keepAlive = keepAlive + keepAlive/2 // [MQTT-3.1.2-22]
	if c.version == 5 {
		props.ReceiveMaximum = uint16(c.srv.opts.ReceiveMaximum)
		props.MaximumPacketSize = uint32(c.srv.opts.MaxPacketSize)
		props.TopicAliasMaximum = topicAliasMaximum
		props.SharedSubAvailable, props.SharedSubAvailableFlag = 1, true // $share/{group}/{filter}
		c.outAliases.max = min(pk.Properties.TopicAliasMaximum, maxOutAliases)
		if pk.Properties.RequestResponseInfo == 1 {
			// Response Information only when asked for [MQTT-3.1.2-28]: a topic root of the
			// client's own for the responses it wants.
			props.ResponseInfo = c.srv.opts.ResponseTopicPrefix + clientID + "/"
		}
	}
	return req, props, nil
}

// willOf is the Will Message of a CONNECT that has one.
func willOf(cp *packets.ConnectParams) *inflight.Will {
	wp := cp.WillProperties
	return &inflight.Will{
		Message: &inflight.Message{Topic: cp.WillTopic, Payload: cp.WillPayload, QoS: cp.WillQos, Retain: cp.WillRetain,
			Properties: packets.Properties{PayloadFormat: wp.PayloadFormat, PayloadFormatFlag: wp.PayloadFormatFlag,
				MessageExpiryInterval: wp.MessageExpiryInterval, ContentType: wp.ContentType, ResponseTopic: wp.ResponseTopic,
				CorrelationData: wp.CorrelationData, User: wp.User}},
		Delay: wp.WillDelayInterval,
	}
}

// authenticate asks the Authenticator, if there is one, whether the client may connect, and
// settles the username the session belongs to. It runs before the broker's lock is taken, so the
// Authenticator may do I/O, bounded by the connect deadline.
func (c *conn) authenticate(deadline time.Time, pk *packets.Packet, req *session.ConnectRequest) error {
	username := string(pk.Connect.Username)
	if a := c.srv.opts.Authenticator; a != nil {
		cr := &ConnectRequest{Client: c.describe(username), CleanStart: pk.Connect.Clean}
		if pk.Connect.PasswordFlag {
			cr.Password = pk.Connect.Password
		}
		if req.Will != nil {
			w := req.Will.Message
			cr.Will = messageOf(w.Topic, w.Payload, w.QoS, w.Retain, &w.Properties)
		}
		ctx, cancel := context.WithDeadline(c.srv.ctx, deadline)
		name, err := a.Authenticate(ctx, cr)
		cancel()
		if err != nil {
			c.refuseConnect(refusalCode(err), err)
			return errConnectRefused
		}
		username = name
	}
	req.Username = username
	info := c.describe(username)
	c.info = &info
	return nil
}

// authorizeWill refuses a CONNECT whose Will the Authorizer would not let the client publish, with
// Not authorized (3.1.1: 0x05), so that a Will cannot write where its client may not.
func (c *conn) authorizeWill(req *session.ConnectRequest) error {
	az := c.srv.opts.Authorizer
	if az == nil || req.Will == nil || az.CanPublish(c.info, req.Will.Message.Topic) {
		return nil
	}
	c.refuseConnect(reason.NotAuthorized, fmt.Errorf("will topic %q not authorized", req.Will.Message.Topic))
	return errConnectRefused
}

// openSession hands the CONNECT to the session layer and waits until its CONNACK is queued.
func (c *conn) openSession(req session.ConnectRequest, props packets.Properties) error {
	acked := make(chan error, 1)
	var sessionPresent bool
	c.sess = c.eng.broker.Connect(req, c, func(present bool, err error) {
		defer func() { acked <- err }()
		if errors.Is(err, session.ErrNotOwner) {
			return // refused below, on this connection's goroutine
		}
		if errors.Is(err, session.ErrTooManySessions) {
			c.refuseConnect(reason.QuotaExceeded, err) // 3.1.1: 0x03 Server unavailable
			return
		}
		if err != nil {
			code := reason.UnspecifiedError
			if storeUnavailable(err) {
				code = reason.ServerUnavailable // the store failed meanwhile: as if it had before
			}
			c.log().Error("connect not committed", slog.Any("err", err))
			c.sendConnack(code, false, packets.Properties{})
			return
		}
		sessionPresent = present
		c.sendConnack(reason.Success, present, props)
	})
	// CONNACK must be the first packet sent [MQTT-3.2.0-1]: read nothing the client pipelined
	// behind its CONNECT before the CONNACK is queued, or a PINGRESP, or the DISCONNECT for a bad
	// packet, would overtake it.
	if err := <-acked; err != nil {
		if errors.Is(err, session.ErrNotOwner) {
			c.refuseConnect(reason.NotAuthorized, err) // another user's session: not taken over
		}
		return errConnectRefused
	}
	c.logConnect(sessionPresent)
	c.attach(c.sess)
	if ev := c.srv.opts.Events.Connect; ev != nil {
		ev(c.info, sessionPresent)
	}
	for _, ps := range req.Subscribes {
		c.subscribeEvent(ps.Requests, ps.Codes)
	}
	return nil
}

// refuseConnect answers a CONNECT with a failure code and tells the ConnectRefused event.
func (c *conn) refuseConnect(code ReasonCode, err error) {
	c.srv.traffic.connectRefused(code)
	c.logRefused(code, err)
	c.sendConnack(code, false, packets.Properties{})
	if ev := c.srv.opts.Events.ConnectRefused; ev != nil {
		ev(&Client{ID: c.clientID, ProtocolVersion: c.version, Listener: c.listener, RemoteAddr: c.nc.RemoteAddr()}, code, err)
	}
}

// sendConnack queues a CONNACK; a 3.1.1 client gets the 3.1.1 return code that says the same, or
// no CONNACK where 3.1.1 has none [MQTT-3.2.2-6]. A refusal always has Session Present 0
// [MQTT-3.2.2-6] and closes the connection.
func (c *conn) sendConnack(code ReasonCode, present bool, props packets.Properties) {
	wireCode := byte(code)
	if c.version == 4 {
		rc, ok := reason.ConnackReturnCode(code)
		if !ok {
			c.Close(0)
			return
		}
		wireCode = byte(rc)
	}
	c.Send(session.PacketOf(packets.Packet{
		Mods:           packets.Mods{AllowResponseInfo: props.ResponseInfo != ""}, // the codec writes it only then
		FixedHeader:    packets.FixedHeader{Type: packets.Connack},
		ReasonCode:     wireCode,
		SessionPresent: present && code == reason.Success,
		Properties:     props,
	}))
	if code != reason.Success {
		c.Close(0)
	}
}

// newClientID makes an Assigned Client Identifier for a 5.0 client that sent none.
func newClientID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "oncemq-" + hex.EncodeToString(b[:])
}
