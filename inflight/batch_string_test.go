package inflight

import "testing"

func TestBatchString(t *testing.T) {
	var b Batch
	if b.String() != "" {
		t.Errorf("empty batch: %q", b.String())
	}
	m := &Message{Seq: 4, Topic: "a/b"}
	b.PutSession(SessionRecord{ClientID: "c", ExpiryInterval: 60, Will: &Will{Message: m}})
	owner := "alice"
	b.PutSession(SessionRecord{ClientID: "o", ExpiryInterval: 1, Owner: &owner})
	b.DeleteSession("d")
	b.PutSubscription("c", SubscriptionRecord{Filter: "a/#", QoS: 1})
	b.DeleteSubscription("c", "x")
	b.PutInbound("c", 7, 0x10)
	b.DeleteInbound("c", 7)
	b.PutOutbound("c", OutboundRecord{PacketID: 1, State: PublishSent, QoS: 2, Order: 3, MsgSeq: 4})
	b.PutOutbound("c", OutboundRecord{PacketID: 1, State: PubrelSent, QoS: 2, Order: 3})
	b.DeleteOutbound("c", 1)
	b.PutQueued("c", QueuedRecord{Order: 5, QoS: 1, MsgSeq: 4})
	b.DeleteQueued("c", 5)
	b.PutMessage(m)
	b.DeleteMessage(4)
	b.PutRetained(m)
	b.DeleteRetained("a/b")
	want := `put session c expiry=60 will=true
put session o expiry=1 will=false owner="alice"
delete session d
put subscription c a/# qos=1
delete subscription c x
put inbound c 7 reason=0x10
delete inbound c 7
put outbound c 1 publish-sent qos=2 order=3 msg=4
put outbound c 1 pubrel-sent qos=2 order=3
delete outbound c 1
put queued c order=5 qos=1 msg=4
delete queued c order=5
put message 4 a/b
delete message 4
put retained a/b
delete retained a/b`
	if got := b.String(); got != want {
		t.Errorf("String:\n%s\nwant:\n%s", got, want)
	}
}
