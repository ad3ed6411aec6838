package mqtt

import (
	"errors"
	"fmt"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/session/topic"
)

// Message is an application message: what Server.Publish publishes and what a Will carries.
type Message struct {
	Topic   string
	Payload []byte
	QoS     byte // 0, 1 or 2: the most a subscriber gets (a subscription's QoS may lower it)
	Retain  bool

	ContentType     string
	ResponseTopic   string
	CorrelationData []byte
	PayloadUTF8     bool          // Payload Format Indicator 1: the payload is UTF-8 text
	Expiry          time.Duration // Message Expiry Interval, whole seconds; 0: never expires
	UserProperties  []UserProperty
}

// UserProperty is an MQTT 5.0 user property: a name and a value, both UTF-8. A name may repeat.
type UserProperty struct {
	Key, Value string
}

// ErrInvalidMessage is returned by Publish for a message no client could have sent.
var ErrInvalidMessage = errors.New("mqtt: invalid message")

// validate checks what a client's PUBLISH is checked for.
func (m *Message) validate() error {
	if !topic.ValidName(m.Topic) {
		return fmt.Errorf("%w: topic name %q", ErrInvalidMessage, m.Topic) // [MQTT-3.3.2-2]
	}
	if isSys(m.Topic) {
		return fmt.Errorf("%w: topic %q: $SYS is the broker's own", ErrInvalidMessage, m.Topic)
	}
	if m.QoS > 2 {
		return fmt.Errorf("%w: QoS %d", ErrInvalidMessage, m.QoS)
	}
	if m.Expiry < 0 || m.Expiry/time.Second > 0xFFFFFFFF {
		return fmt.Errorf("%w: expiry %v", ErrInvalidMessage, m.Expiry)
	}
	return nil
}

// message turns m into the broker's form, created at now (unix nanoseconds).
func (m *Message) message(now int64) *inflight.Message {
	props := packets.Properties{
		ContentType:     m.ContentType,
		ResponseTopic:   m.ResponseTopic,
		CorrelationData: m.CorrelationData,
	}
	if m.PayloadUTF8 {
		props.PayloadFormat, props.PayloadFormatFlag = 1, true
	}
	for _, u := range m.UserProperties {
		props.User = append(props.User, packets.UserProperty{Key: u.Key, Val: u.Value})
	}
	im := &inflight.Message{Topic: m.Topic, Payload: m.Payload, QoS: m.QoS, Retain: m.Retain, Properties: props, Created: now}
	if secs := uint32(m.Expiry / time.Second); secs > 0 {
		im.Properties.MessageExpiryInterval = secs
		im.ExpiresAt = now + int64(secs)*int64(time.Second)
	}
	return im
}

// messageOf is the public form of a Will or a received message.
func messageOf(topicName string, payload []byte, qos byte, retain bool, p *packets.Properties) *Message {
	m := &Message{
		Topic: topicName, Payload: payload, QoS: qos, Retain: retain,
		ContentType: p.ContentType, ResponseTopic: p.ResponseTopic, CorrelationData: p.CorrelationData,
		PayloadUTF8: p.PayloadFormatFlag && p.PayloadFormat == 1,
		Expiry:      time.Duration(p.MessageExpiryInterval) * time.Second,
	}
	for _, u := range p.User {
		m.UserProperties = append(m.UserProperties, UserProperty{Key: u.Key, Value: u.Val})
	}
	return m
}
