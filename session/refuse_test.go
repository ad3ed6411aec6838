package session

import (
	"errors"
	"testing"

	"github.com/oncemq/oncemq/session/reason"
)

// Refuse answers a 5.0 PUBLISH with the caller's code, after every earlier commit, and leaves the id
// out of the inbound table: a later PUBLISH with the id is a new message [MQTT-4.3.3-9].
func TestRefuse50(t *testing.T) {
	h := newHarness(t, Options{})
	pub, pubC := h.connect("pub", 3600, 0)

	h.publish(pub, pubC, "t", "m", 2, 1) // an earlier PUBLISH, not committed yet
	h.b.Refuse(pub, pubC, 1, 2, reason.QuotaExceeded)
	h.b.Refuse(pub, pubC, 2, 3, reason.NotAuthorized)
	h.b.Refuse(pub, pubC, 1, 4, reason.Success) // not a refusal code: sent as 0x80
	h.b.Refuse(pub, pubC, 0, 0, reason.NotAuthorized)
	h.commitExpect("refusals behind the earlier commit",
		"submit #1", "submit #2", "submit #3", "submit #4",
		"commit #1", "pub <- PUBREC id=1 No matching subscribers",
		"commit #2", "pub <- PUBACK id=2 Quota exceeded",
		"commit #3", "pub <- PUBREC id=3 Not authorized",
		"commit #4", "pub <- PUBACK id=4 Unspecified error")
	if n := h.b.Stats().InboundAwaitingPubrel; n != 1 {
		t.Errorf("%d inbound ids await PUBREL, want 1: a refused id is not in the table", n)
	}

	h.publish(pub, pubC, "t", "m", 2, 3)
	if got := h.j.records(); len(got) != 1 || len(got[0]) != 1 || got[0][0] != "put inbound pub 3 reason=0x10" {
		t.Errorf("PUBLISH with the refused id 3: batches %q, want it accepted as new", got)
	}
}

// A QoS 2 id that already awaits PUBREL was accepted and routed: a resend the caller would refuse
// is answered as the first time [MQTT-4.3.3-10].
func TestRefuseIDAwaitingPubrelAnswersAsTheFirstTime(t *testing.T) {
	h := newHarness(t, Options{})
	pub, pubC := h.connect("pub", 3600, 0)
	h.publish(pub, pubC, "t", "m", 2, 5)
	h.settle()

	h.b.Refuse(pub, pubC, 2, 5, reason.NotAuthorized)
	h.commitExpect("refused resend", "submit #1", "commit #1", "pub <- PUBREC id=5 No matching subscribers")
}

// 3.1.1 has no refusal code: a PUBLISH not authorized is acknowledged and not routed, its QoS 2 id
// not stored, so that a later PUBREL gets PUBCOMP; it is counted (3.1.1 [MQTT-3.3.5-2]).
func TestRefuse311NotAuthorizedAcknowledgesWithoutRouting(t *testing.T) {
	h := newHarness(t, Options{})
	pub, pubC := h.connectAs(ConnectRequest{ClientID: "pub", ProtocolVersion: 4, CleanStart: true})
	h.b.Refuse(pub, pubC, 1, 1, reason.NotAuthorized)
	h.b.Refuse(pub, pubC, 2, 2, reason.NotAuthorized)
	h.b.Refuse(pub, pubC, 0, 0, reason.NotAuthorized)
	h.commitExpect("3.1.1 refusals", "submit #1", "submit #2",
		"commit #1", "pub <- PUBACK id=1 Success", "commit #2", "pub <- PUBREC id=2 Success")
	if n := h.b.Stats().InboundAwaitingPubrel; n != 0 {
		t.Errorf("%d inbound ids await PUBREL, want 0: a refused id is not stored", n)
	}
	if n := h.b.Metrics.PublishRefused.Load(); n != 3 {
		t.Errorf("PublishRefused = %d, want 3", n)
	}
	h.b.Pubrel(pub, pubC, 2)
	h.commitExpect("PUBREL of the refused id", "submit #1", "commit #1", "pub <- PUBCOMP id=2 Success")
}

// Any other 3.1.1 refusal closes the connection: the client cannot be told (3.1.1 [MQTT-3.3.5-2]).
func TestRefuse311OtherReasonClosesTheConnection(t *testing.T) {
	h := newHarness(t, Options{})
	pub, pubC := h.connectAs(ConnectRequest{ClientID: "pub", ProtocolVersion: 4, CleanStart: true})
	h.b.Refuse(pub, pubC, 1, 1, reason.QuotaExceeded)
	h.commitExpect("3.1.1 refusal", "pub closed: Unspecified error")
}

// Once the journal has failed, QoS 1 and 2 PUBLISHes are refused with 0x80 instead of acknowledged;
// a 3.1.1 connection is closed.
func TestJournalFailedRefusesQoS1And2(t *testing.T) {
	h := newHarness(t, Options{})
	pub, pubC := h.connect("pub", 3600, 0)
	old, oldC := h.connectAs(ConnectRequest{ClientID: "old", ProtocolVersion: 4, CleanStart: true})
	h.j.fail(errors.New("disk gone"))

	h.publish(pub, pubC, "t", "m", 1, 1)
	h.publish(pub, pubC, "t", "m", 2, 2)
	h.publish(old, oldC, "t", "m", 1, 1)
	h.commitExpect("publishes on a failed journal", "submit #1", "submit #2", "old closed: Unspecified error",
		"fail #1", "pub <- PUBACK id=1 Unspecified error",
		"fail #2", "pub <- PUBREC id=2 Unspecified error")
	if n := h.b.Stats().InboundAwaitingPubrel; n != 0 {
		t.Errorf("%d inbound ids await PUBREL after refusals, want 0", n)
	}
}

// A commit that fails under a PUBLISH acknowledges nothing: the connection is closed instead.
func TestCommitFailureClosesInsteadOfAcknowledging(t *testing.T) {
	h := newHarness(t, Options{})
	pub, pubC := h.connect("pub", 3600, 0)
	h.publish(pub, pubC, "t", "m", 2, 1)
	h.j.fail(errors.New("disk gone"))
	h.commitExpect("failed commit", "submit #1", "fail #1", "pub closed: Unspecified error")
	if n := h.b.Metrics.CommitFailures.Load(); n != 1 {
		t.Errorf("CommitFailures = %d, want 1", n)
	}
}
