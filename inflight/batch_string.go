package inflight

import (
	"fmt"
	"strings"
)

// String lists the batch's changes, one a line, in order ("put inbound c 7 reason=0x00"), for logs
// and for tests that check what a batch holds.
func (b *Batch) String() string {
	var sb strings.Builder
	for i := range b.ops {
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(b.ops[i].String())
	}
	return sb.String()
}

func (o *op) String() string {
	switch o.kind {
	case opPutSession:
		s := fmt.Sprintf("put session %s expiry=%d will=%t", o.clientID, o.session.ExpiryInterval, o.session.Will != nil)
		if o.session.Owner != nil {
			s += fmt.Sprintf(" owner=%q", *o.session.Owner)
		}
		return s
	case opDeleteSession:
		return "delete session " + o.clientID
	case opPutSubscription:
		return fmt.Sprintf("put subscription %s %s qos=%d", o.clientID, o.sub.Filter, o.sub.QoS)
	case opDeleteSubscription:
		return fmt.Sprintf("delete subscription %s %s", o.clientID, o.filter)
	case opPutInbound:
		return fmt.Sprintf("put inbound %s %d reason=0x%02X", o.clientID, o.packetID, o.reason)
	case opDeleteInbound:
		return fmt.Sprintf("delete inbound %s %d", o.clientID, o.packetID)
	case opPutOutbound:
		s := fmt.Sprintf("put outbound %s %d %s qos=%d order=%d", o.clientID, o.out.PacketID, o.out.State, o.out.QoS, o.out.Order)
		if o.out.MsgSeq != 0 {
			s += fmt.Sprintf(" msg=%d", o.out.MsgSeq)
		}
		return s
	case opDeleteOutbound:
		return fmt.Sprintf("delete outbound %s %d", o.clientID, o.packetID)
	case opPutQueued:
		return fmt.Sprintf("put queued %s order=%d qos=%d msg=%d", o.clientID, o.queued.Order, o.queued.QoS, o.queued.MsgSeq)
	case opDeleteQueued:
		return fmt.Sprintf("delete queued %s order=%d", o.clientID, o.order)
	case opPutMessage:
		return fmt.Sprintf("put message %d %s", o.seq, o.msg.Topic)
	case opDeleteMessage:
		return fmt.Sprintf("delete message %d", o.seq)
	case opPutRetained:
		return "put retained " + o.topic
	case opDeleteRetained:
		return "delete retained " + o.topic
	case opPutDedup:
		return fmt.Sprintf("put dedup %s reason=0x%02X", dedupName(o.dedup.Key), o.dedup.Reason)
	case opDeleteDedup:
		return "delete dedup " + dedupName(o.topic)
	case opPutShared, opDeleteShared:
		return o.sharedString()
	}
	return fmt.Sprintf("change of kind %d", o.kind)
}

// String names the state for logs: "publish-sent" or "pubrel-sent".
func (s OutboundState) String() string {
	switch s {
	case PublishSent:
		return "publish-sent"
	case PubrelSent:
		return "pubrel-sent"
	}
	return fmt.Sprintf("state-%d", byte(s))
}

// dedupName writes a dedup key as "c/client/id" or "t/topic/id".
func dedupName(k string) string {
	scope, name, id, ok := SplitDedupKey(k)
	if !ok {
		return fmt.Sprintf("%q", k)
	}
	return string(scope) + "/" + name + "/" + id
}
