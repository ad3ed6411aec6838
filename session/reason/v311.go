package reason

import "fmt"

// ReturnCode is an MQTT 3.1.1 CONNACK return code (3.1.1 section 3.2.2.3). It is a table of its
// own: the numbers mean other things than the 5.0 reason codes.
type ReturnCode byte

// The MQTT 3.1.1 CONNACK return codes.
const (
	ConnectionAccepted                           ReturnCode = 0x00
	ConnectionRefusedUnacceptableProtocolVersion ReturnCode = 0x01
	ConnectionRefusedIdentifierRejected          ReturnCode = 0x02
	ConnectionRefusedServerUnavailable           ReturnCode = 0x03
	ConnectionRefusedBadUsernameOrPassword       ReturnCode = 0x04
	ConnectionRefusedNotAuthorized               ReturnCode = 0x05
)

// String returns the 3.1.1 specification's description of rc.
func (rc ReturnCode) String() string {
	switch rc {
	case ConnectionAccepted:
		return "Connection Accepted"
	case ConnectionRefusedUnacceptableProtocolVersion:
		return "Connection Refused, unacceptable protocol version"
	case ConnectionRefusedIdentifierRejected:
		return "Connection Refused, identifier rejected"
	case ConnectionRefusedServerUnavailable:
		return "Connection Refused, Server unavailable"
	case ConnectionRefusedBadUsernameOrPassword:
		return "Connection Refused, bad user name or password"
	case ConnectionRefusedNotAuthorized:
		return "Connection Refused, not authorized"
	}
	return fmt.Sprintf("return code 0x%02X", byte(rc))
}

// ConnackReturnCode maps a 5.0 CONNACK reason code to the 3.1.1 return code that says the same to
// a 3.1.1 client. ok is false when 3.1.1 has none (a malformed CONNECT, a protocol error, a will
// the server cannot take...): the server then closes the connection without a CONNACK
// (3.1.1 [MQTT-3.2.2-6]).
//
// Refusals that are the server's state rather than the client's request (unspecified or
// implementation specific error, busy, quota, rate, use another server, moved) become "Server
// unavailable": the client may try again later, which is what they mean.
func ConnackReturnCode(c Code) (rc ReturnCode, ok bool) {
	switch c {
	case Success:
		return ConnectionAccepted, true
	case UnsupportedProtocolVersion:
		return ConnectionRefusedUnacceptableProtocolVersion, true
	case ClientIdentifierNotValid:
		return ConnectionRefusedIdentifierRejected, true
	case BadUsernameOrPassword, BadAuthenticationMethod:
		return ConnectionRefusedBadUsernameOrPassword, true
	case NotAuthorized, Banned:
		return ConnectionRefusedNotAuthorized, true
	case ServerUnavailable, ServerBusy, UnspecifiedError, ImplementationSpecificError, QuotaExceeded,
		ConnectionRateExceeded, UseAnotherServer, ServerMoved:
		return ConnectionRefusedServerUnavailable, true
	}
	return 0, false
}
