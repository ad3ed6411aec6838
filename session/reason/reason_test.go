package reason

import "testing"

// The specification's reason code table (MQTT 5.0 section 2.4): value, name, and the constant.
var table = []struct {
	code Code
	want byte
	name string
}{
	{Success, 0x00, "Success"},
	{NormalDisconnection, 0x00, "Success"},
	{GrantedQoS0, 0x00, "Success"},
	{GrantedQoS1, 0x01, "Granted QoS 1"},
	{GrantedQoS2, 0x02, "Granted QoS 2"},
	{DisconnectWithWill, 0x04, "Disconnect with Will Message"},
	{NoMatchingSubscribers, 0x10, "No matching subscribers"},
	{NoSubscriptionExisted, 0x11, "No subscription existed"},
	{ContinueAuthentication, 0x18, "Continue authentication"},
	{ReAuthenticate, 0x19, "Re-authenticate"},
	{UnspecifiedError, 0x80, "Unspecified error"},
	{MalformedPacket, 0x81, "Malformed Packet"},
	{ProtocolError, 0x82, "Protocol Error"},
	{ImplementationSpecificError, 0x83, "Implementation specific error"},
	{UnsupportedProtocolVersion, 0x84, "Unsupported Protocol Version"},
	{ClientIdentifierNotValid, 0x85, "Client Identifier not valid"},
	{BadUsernameOrPassword, 0x86, "Bad User Name or Password"},
	{NotAuthorized, 0x87, "Not authorized"},
	{ServerUnavailable, 0x88, "Server unavailable"},
	{ServerBusy, 0x89, "Server busy"},
	{Banned, 0x8A, "Banned"},
	{ServerShuttingDown, 0x8B, "Server shutting down"},
	{BadAuthenticationMethod, 0x8C, "Bad authentication method"},
	{KeepAliveTimeout, 0x8D, "Keep Alive timeout"},
	{SessionTakenOver, 0x8E, "Session taken over"},
	{TopicFilterInvalid, 0x8F, "Topic Filter invalid"},
	{TopicNameInvalid, 0x90, "Topic Name invalid"},
	{PacketIdentifierInUse, 0x91, "Packet Identifier in use"},
	{PacketIdentifierNotFound, 0x92, "Packet Identifier not found"},
	{ReceiveMaximumExceeded, 0x93, "Receive Maximum exceeded"},
	{TopicAliasInvalid, 0x94, "Topic Alias invalid"},
	{PacketTooLarge, 0x95, "Packet too large"},
	{MessageRateTooHigh, 0x96, "Message rate too high"},
	{QuotaExceeded, 0x97, "Quota exceeded"},
	{AdministrativeAction, 0x98, "Administrative action"},
	{PayloadFormatInvalid, 0x99, "Payload format invalid"},
	{RetainNotSupported, 0x9A, "Retain not supported"},
	{QoSNotSupported, 0x9B, "QoS not supported"},
	{UseAnotherServer, 0x9C, "Use another server"},
	{ServerMoved, 0x9D, "Server moved"},
	{SharedSubscriptionsNotSupported, 0x9E, "Shared Subscriptions not supported"},
	{ConnectionRateExceeded, 0x9F, "Connection rate exceeded"},
	{MaximumConnectTime, 0xA0, "Maximum connect time"},
	{SubscriptionIdentifiersNotSupported, 0xA1, "Subscription Identifiers not supported"},
	{WildcardSubscriptionsNotSupported, 0xA2, "Wildcard Subscriptions not supported"},
}

func TestCodesAreTheSpecificationTable(t *testing.T) {
	distinct := make(map[Code]bool)
	for _, tt := range table {
		if byte(tt.code) != tt.want {
			t.Errorf("%s = 0x%02X, want 0x%02X", tt.name, byte(tt.code), tt.want)
		}
		if got := tt.code.String(); got != tt.name {
			t.Errorf("Code(0x%02X).String() = %q, want %q", tt.want, got, tt.name)
		}
		if got, want := tt.code.IsFailure(), tt.want >= 0x80; got != want {
			t.Errorf("%s.IsFailure() = %v, want %v", tt.name, got, want)
		}
		distinct[tt.code] = true
	}
	// Every value the table defines has a name, and nothing else has one.
	if len(distinct) != len(names) {
		t.Errorf("%d distinct codes in the table, %d names", len(distinct), len(names))
	}
	if got := Code(0x03).String(); got != "reason code 0x03" {
		t.Errorf("undefined code: %q", got)
	}
	if SubackFailure != 0x80 {
		t.Errorf("3.1.1 SUBACK Failure = 0x%02X, want 0x80", byte(SubackFailure))
	}
}

func TestReturnCodes311(t *testing.T) {
	for _, tt := range []struct {
		rc   ReturnCode
		want byte
		name string
	}{
		{ConnectionAccepted, 0x00, "Connection Accepted"},
		{ConnectionRefusedUnacceptableProtocolVersion, 0x01, "Connection Refused, unacceptable protocol version"},
		{ConnectionRefusedIdentifierRejected, 0x02, "Connection Refused, identifier rejected"},
		{ConnectionRefusedServerUnavailable, 0x03, "Connection Refused, Server unavailable"},
		{ConnectionRefusedBadUsernameOrPassword, 0x04, "Connection Refused, bad user name or password"},
		{ConnectionRefusedNotAuthorized, 0x05, "Connection Refused, not authorized"},
	} {
		if byte(tt.rc) != tt.want || tt.rc.String() != tt.name {
			t.Errorf("return code %q = 0x%02X %q, want 0x%02X", tt.name, byte(tt.rc), tt.rc.String(), tt.want)
		}
	}
	if got := ReturnCode(6).String(); got != "return code 0x06" {
		t.Errorf("undefined return code: %q", got)
	}
}

// Every reason code a 5.0 CONNACK may carry (MQTT 5.0 section 3.2.2.2) maps to the 3.1.1 return
// code that says the same, or to none: then the connection is closed without CONNACK (3.1.1
// [MQTT-3.2.2-6]).
func TestConnackReturnCode(t *testing.T) {
	const none = ReturnCode(0xFF)
	for _, tt := range []struct {
		code Code
		want ReturnCode
	}{
		{Success, ConnectionAccepted},
		{UnspecifiedError, ConnectionRefusedServerUnavailable},
		{MalformedPacket, none},
		{ProtocolError, none},
		{ImplementationSpecificError, ConnectionRefusedServerUnavailable},
		{UnsupportedProtocolVersion, ConnectionRefusedUnacceptableProtocolVersion},
		{ClientIdentifierNotValid, ConnectionRefusedIdentifierRejected},
		{BadUsernameOrPassword, ConnectionRefusedBadUsernameOrPassword},
		{NotAuthorized, ConnectionRefusedNotAuthorized},
		{ServerUnavailable, ConnectionRefusedServerUnavailable},
		{ServerBusy, ConnectionRefusedServerUnavailable},
		{Banned, ConnectionRefusedNotAuthorized},
		{BadAuthenticationMethod, ConnectionRefusedBadUsernameOrPassword},
		{TopicNameInvalid, none},
		{PacketTooLarge, none},
		{QuotaExceeded, ConnectionRefusedServerUnavailable},
		{PayloadFormatInvalid, none},
		{RetainNotSupported, none},
		{QoSNotSupported, none},
		{UseAnotherServer, ConnectionRefusedServerUnavailable},
		{ServerMoved, ConnectionRefusedServerUnavailable},
		{ConnectionRateExceeded, ConnectionRefusedServerUnavailable},
	} {
		rc, ok := ConnackReturnCode(tt.code)
		if tt.want == none {
			if ok {
				t.Errorf("%s: 3.1.1 return code %s, want none (close without CONNACK)", tt.code, rc)
			}
			continue
		}
		if !ok || rc != tt.want {
			t.Errorf("%s: 3.1.1 return code %s (ok %v), want %s", tt.code, rc, ok, tt.want)
		}
	}
}
