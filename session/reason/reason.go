// Package reason names the MQTT reason codes: the MQTT 5.0 reason codes of the specification's
// reason code table (section 2.4), and the MQTT 3.1.1 CONNACK return codes, which are a table of
// their own (3.1.1 section 3.2.2.3). Code and packet handlers use these names instead of numbers,
// so that a reader can check them against the specification's tables.
package reason

import "fmt"

// Code is an MQTT 5.0 reason code. A value of 0x80 or more is a failure (§2.4).
type Code byte

// The MQTT 5.0 reason codes, named as in the specification's reason code table. Several names share
// the value 0x00: the packet says which one is meant.
const (
	Success                             Code = 0x00
	NormalDisconnection                 Code = 0x00
	GrantedQoS0                         Code = 0x00
	GrantedQoS1                         Code = 0x01
	GrantedQoS2                         Code = 0x02
	DisconnectWithWill                  Code = 0x04
	NoMatchingSubscribers               Code = 0x10
	NoSubscriptionExisted               Code = 0x11
	ContinueAuthentication              Code = 0x18
	ReAuthenticate                      Code = 0x19
	UnspecifiedError                    Code = 0x80
	MalformedPacket                     Code = 0x81
	ProtocolError                       Code = 0x82
	ImplementationSpecificError         Code = 0x83
	UnsupportedProtocolVersion          Code = 0x84
	ClientIdentifierNotValid            Code = 0x85
	BadUsernameOrPassword               Code = 0x86
	NotAuthorized                       Code = 0x87
	ServerUnavailable                   Code = 0x88
	ServerBusy                          Code = 0x89
	Banned                              Code = 0x8A
	ServerShuttingDown                  Code = 0x8B
	BadAuthenticationMethod             Code = 0x8C
	KeepAliveTimeout                    Code = 0x8D
	SessionTakenOver                    Code = 0x8E
	TopicFilterInvalid                  Code = 0x8F
	TopicNameInvalid                    Code = 0x90
	PacketIdentifierInUse               Code = 0x91
	PacketIdentifierNotFound            Code = 0x92
	ReceiveMaximumExceeded              Code = 0x93
	TopicAliasInvalid                   Code = 0x94
	PacketTooLarge                      Code = 0x95
	MessageRateTooHigh                  Code = 0x96
	QuotaExceeded                       Code = 0x97
	AdministrativeAction                Code = 0x98
	PayloadFormatInvalid                Code = 0x99
	RetainNotSupported                  Code = 0x9A
	QoSNotSupported                     Code = 0x9B
	UseAnotherServer                    Code = 0x9C
	ServerMoved                         Code = 0x9D
	SharedSubscriptionsNotSupported     Code = 0x9E
	ConnectionRateExceeded              Code = 0x9F
	MaximumConnectTime                  Code = 0xA0
	SubscriptionIdentifiersNotSupported Code = 0xA1
	WildcardSubscriptionsNotSupported   Code = 0xA2
)

// SubackFailure is the MQTT 3.1.1 SUBACK return code for a refused subscription, "Failure". 3.1.1
// has no other refusal code, so every 5.0 SUBACK refusal becomes this one for a 3.1.1 client.
const SubackFailure = UnspecifiedError

// names are the specification's names. 0x00 is named "Success", its meaning in most packets.
var names = map[Code]string{
	Success:                             "Success",
	GrantedQoS1:                         "Granted QoS 1",
	GrantedQoS2:                         "Granted QoS 2",
	DisconnectWithWill:                  "Disconnect with Will Message",
	NoMatchingSubscribers:               "No matching subscribers",
	NoSubscriptionExisted:               "No subscription existed",
	ContinueAuthentication:              "Continue authentication",
	ReAuthenticate:                      "Re-authenticate",
	UnspecifiedError:                    "Unspecified error",
	MalformedPacket:                     "Malformed Packet",
	ProtocolError:                       "Protocol Error",
	ImplementationSpecificError:         "Implementation specific error",
	UnsupportedProtocolVersion:          "Unsupported Protocol Version",
	ClientIdentifierNotValid:            "Client Identifier not valid",
	BadUsernameOrPassword:               "Bad User Name or Password",
	NotAuthorized:                       "Not authorized",
	ServerUnavailable:                   "Server unavailable",
	ServerBusy:                          "Server busy",
	Banned:                              "Banned",
	ServerShuttingDown:                  "Server shutting down",
	BadAuthenticationMethod:             "Bad authentication method",
	KeepAliveTimeout:                    "Keep Alive timeout",
	SessionTakenOver:                    "Session taken over",
	TopicFilterInvalid:                  "Topic Filter invalid",
	TopicNameInvalid:                    "Topic Name invalid",
	PacketIdentifierInUse:               "Packet Identifier in use",
	PacketIdentifierNotFound:            "Packet Identifier not found",
	ReceiveMaximumExceeded:              "Receive Maximum exceeded",
	TopicAliasInvalid:                   "Topic Alias invalid",
	PacketTooLarge:                      "Packet too large",
	MessageRateTooHigh:                  "Message rate too high",
	QuotaExceeded:                       "Quota exceeded",
	AdministrativeAction:                "Administrative action",
	PayloadFormatInvalid:                "Payload format invalid",
	RetainNotSupported:                  "Retain not supported",
	QoSNotSupported:                     "QoS not supported",
	UseAnotherServer:                    "Use another server",
	ServerMoved:                         "Server moved",
	SharedSubscriptionsNotSupported:     "Shared Subscriptions not supported",
	ConnectionRateExceeded:              "Connection rate exceeded",
	MaximumConnectTime:                  "Maximum connect time",
	SubscriptionIdentifiersNotSupported: "Subscription Identifiers not supported",
	WildcardSubscriptionsNotSupported:   "Wildcard Subscriptions not supported",
}

// String returns the specification's name of c ("Quota exceeded"), or the number of a code the
// specification does not define.
func (c Code) String() string {
	if n, ok := names[c]; ok {
		return n
	}
	return fmt.Sprintf("reason code 0x%02X", byte(c))
}

// IsFailure reports whether c says the request failed: 0x80 or more (§2.4).
func (c Code) IsFailure() bool { return c >= UnspecifiedError }
