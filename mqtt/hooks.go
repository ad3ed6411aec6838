package mqtt

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"time"

	"github.com/oncemq/oncemq/session"
	"github.com/oncemq/oncemq/session/reason"
)

// ReasonCode is an MQTT 5.0 reason code. Package github.com/oncemq/oncemq/session/reason names
// every value of the specification's table; 3.1.1 clients get the nearest 3.1.1 return code.
type ReasonCode = reason.Code

// Client describes the client of one connection, for the hooks.
type Client struct {
	ID              string               // client identifier; the assigned one if the client sent none
	Username        string               // the authenticated username ("" for anonymous)
	ProtocolVersion byte                 // 4 for MQTT 3.1.1, 5 for MQTT 5.0
	Listener        net.Addr             // the address of the listener that accepted the connection
	RemoteAddr      net.Addr             // the client's address
	TLS             *tls.ConnectionState // the TLS state, with the peer certificates; nil without TLS
}

// ConnectRequest is a CONNECT, for an Authenticator to decide on.
type ConnectRequest struct {
	Client            // Username is the one the client sent
	Password   []byte // nil when the client sent none
	CleanStart bool
	Will       *Message // the Will Message, nil without one; an Authenticator may check where it writes
}

// Authenticator decides whether a CONNECT may go on.
//
// Authenticate runs once per CONNECT on that connection's own goroutine, before the broker's lock
// is taken and before the session is touched, so it may do I/O (ask an authentication service); ctx
// ends at the connect timeout or when the server shuts down. It returns the username the session
// belongs to from then on (the one the client sent, or another such as a certificate's Common
// Name) and nil to accept. To refuse, it returns an error: a *Refusal picks the reason code (for
// example ErrBadUsernameOrPassword or ErrNotAuthorized); any other error refuses with Server
// unavailable, as an authentication service that cannot answer should.
type Authenticator interface {
	Authenticate(ctx context.Context, req *ConnectRequest) (username string, err error)
}

// Authorizer decides who may publish, subscribe and read what.
//
// CanPublish and CanSubscribe run on the connection's goroutine before the broker's lock is taken;
// they are called for every PUBLISH and every filter, so they should answer from memory. CanRead
// runs with the broker's lock held, for every message routed to a session (retained messages
// included): it must not block, do I/O or call back into the Server.
type Authorizer interface {
	// CanPublish reports whether the client may publish to topic. A refused QoS 1 or 2 PUBLISH
	// gets PUBACK or PUBREC 0x87 (Not authorized) from a 5.0 client; 3.1.1 has no refusal, so a
	// 3.1.1 client gets the usual PUBACK or PUBREC (its QoS 2 id is not kept: PUBREL gets PUBCOMP).
	// The message is not routed either way, and is counted in Stats. CanPublish also decides the
	// Will at CONNECT: a Will it refuses refuses the CONNECT with 0x87 (3.1.1: 0x05).
	CanPublish(c *Client, topic string) bool
	// CanSubscribe reports whether the client may subscribe to filter; a refused filter gets 0x87
	// (3.1.1: 0x80) in SUBACK. A filter wider than what the client may read (such as #) may be
	// granted: CanRead filters each message. For a shared subscription, $share/{group}/{filter},
	// it is asked about {filter}: the share name grants nothing.
	CanSubscribe(c *Client, filter string) bool
	// CanRead reports whether the session of clientID, owned by username, may receive a message
	// published to topic. Called with the broker's lock held.
	CanRead(clientID, username, topic string) bool
}

// DropReason says why a message was dropped on purpose.
type DropReason = session.DropReason

// The drop reasons.
const (
	DropQueueFull = session.QueueFull // the session's queue was full (MaxQueued, MaxQueuedBytes) under a drop policy
	DropExpired   = session.Expired   // the Message Expiry Interval passed before delivery
	DropTooLarge  = session.TooLarge  // larger than the client's Maximum Packet Size
	// DropUnreadable: the body of a queued or in-flight message could not be read from the file
	// (an I/O error, damage); the topic is "".
	DropUnreadable = session.Unreadable
	// DropNotRetained: a QoS 0 message was delivered but not retained, the retained messages being
	// at their limit (MaxRetained, MaxRetainedBytes); the client id is "".
	DropNotRetained = session.RetainedFull
	// DropSharedNoMember: a shared subscription group had no member for the message (QoS 0 with no
	// member online, or waiting when the group's last member left); clientID is the group's filter.
	DropSharedNoMember = session.SharedNoMember
	// DropSharedMemberGone: a QoS 2 message sent to a member of a shared subscription group whose
	// session ended first; never sent to another member [MQTT-4.8.2-5]. clientID is the group's filter.
	DropSharedMemberGone = session.SharedMemberGone
)

// Disconnect says how a connection ended.
type Disconnect struct {
	ByClient bool          // the client sent DISCONNECT
	Reason   ReasonCode    // the client's DISCONNECT reason, or the one the broker closed with; 0 when the network ended it
	Err      error         // what ended it when the client did not: a network error, a protocol error
	Duration time.Duration // from accept to close
}

// Events are called as clients come and go. Each field may be nil. The Connect, Disconnect and
// Subscribe functions run on the connection's goroutine, Drop with the broker's lock held; none may
// block or call back into the Server (hand the event to a goroutine of your own for slow work).
type Events struct {
	// Connect is called once a CONNECT is accepted and its CONNACK queued.
	Connect func(c *Client, sessionPresent bool)
	// ConnectRefused is called when a CONNECT is refused with a CONNACK failure code.
	ConnectRefused func(c *Client, code ReasonCode, err error)
	// Disconnect is called when an accepted connection ends.
	Disconnect func(c *Client, d Disconnect)
	// Subscribe is called after a SUBSCRIBE, with the SUBACK reason code of each filter.
	Subscribe func(c *Client, filters []string, codes []ReasonCode)
	// Drop is called for a message dropped on purpose instead of delivered to clientID.
	Drop func(clientID, topic string, why DropReason)
}

// A Refusal is an error that refuses a CONNECT with a chosen reason code.
type Refusal struct {
	Code ReasonCode
}

func (r *Refusal) Error() string { return "refused: " + r.Code.String() }

// Refusals an Authenticator returns.
var (
	ErrBadUsernameOrPassword = &Refusal{Code: reason.BadUsernameOrPassword} // 3.1.1: 0x04
	ErrNotAuthorized         = &Refusal{Code: reason.NotAuthorized}         // 3.1.1: 0x05
	ErrBanned                = &Refusal{Code: reason.Banned}                // 3.1.1: 0x05
	ErrServerBusy            = &Refusal{Code: reason.ServerBusy}            // 3.1.1: 0x03
)

// refusalCode is the CONNACK reason for an Authenticator's error.
func refusalCode(err error) ReasonCode {
	var r *Refusal
	if errors.As(err, &r) && r.Code >= 0x80 {
		return r.Code
	}
	return reason.ServerUnavailable
}
