package session

import (
	"errors"
	"testing"
	"time"

	"github.com/oncemq/oncemq/inflight"
)

// connectResult connects req on a new recorded connection, commits, and returns Connect's error.
func (h *harness) connectResult(name string, req ConnectRequest) (*Session, error) {
	h.t.Helper()
	var err error
	s := h.b.Connect(req, &recConn{name: name, rec: h.rec}, func(_ bool, e error) { err = e })
	h.j.commit()
	return s, err
}

// A session belongs to the username that created it: a CONNECT with its client id from another
// username, or from an anonymous client, is refused with ErrNotOwner and neither takes the session
// over (the owner's connection stays) nor discards it (Clean Start); the owner may come back.
func TestSessionBelongsToItsCreator(t *testing.T) {
	h := newHarness(t, Options{})
	own, ownC := h.connectAs(ConnectRequest{ClientID: "dev", Username: "alice", ProtocolVersion: 5, ExpiryInterval: 3600})
	h.subscribe(own, ownC, "t", 1)
	for _, tc := range []struct {
		user  string
		clean bool
	}{{"mallory", false}, {"mallory", true}, {"", false}, {"", true}} {
		s, err := h.connectResult("thief", ConnectRequest{ClientID: "dev", Username: tc.user, ProtocolVersion: 5,
			CleanStart: tc.clean, ExpiryInterval: 3600})
		if !errors.Is(err, ErrNotOwner) || s != nil {
			t.Errorf("CONNECT as %q (clean %t): session %v, err %v; want nil, ErrNotOwner", tc.user, tc.clean, s, err)
		}
		h.expectEvents("refused CONNECT as "+tc.user, "submit #1", "commit #1") // no takeover, nothing to commit
		h.j.step()
	}
	if n := h.b.Metrics.NotOwner.Load(); n != 4 {
		t.Errorf("NotOwner = %d, want 4", n)
	}
	if st := h.b.Stats(); st.Subscriptions != 1 || st.SessionsOnline != 1 {
		t.Errorf("after refused CONNECTs: %+v, want the owner's session online with its subscription", st)
	}
	if _, err := h.connectResult("dev", ConnectRequest{ClientID: "dev", Username: "alice", ProtocolVersion: 5, ExpiryInterval: 3600}); err != nil {
		t.Fatalf("the owner's own takeover: %v", err)
	}
	h.expectEvents("owner takes over", "dev closed: Session taken over", "submit #1", "commit #1")
}

// An anonymous client's session belongs to anonymous clients: a named user cannot take it either.
func TestAnonymousSessionIsNotClaimedByAUser(t *testing.T) {
	h := newHarness(t, Options{})
	h.connectAs(ConnectRequest{ClientID: "anon", ProtocolVersion: 4, ExpiryInterval: NeverExpire})
	if _, err := h.connectResult("alice", ConnectRequest{ClientID: "anon", Username: "alice", ProtocolVersion: 4, ExpiryInterval: NeverExpire}); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("alice taking an anonymous session: %v, want ErrNotOwner", err)
	}
}

// The owner is part of the session record, committed with it before CONNACK, and a restart gives
// it back, so MayRead sees the owner of an offline session.
func TestOwnerIsStoredAndRestored(t *testing.T) {
	h := newHarness(t, Options{})
	c := &recConn{name: "dev", rec: h.rec}
	h.b.Connect(ConnectRequest{ClientID: "dev", Username: "alice", ProtocolVersion: 5, ExpiryInterval: 3600}, c, func(bool, error) {})
	got := h.j.records()
	if len(got) != 1 || len(got[0]) != 1 || got[0][0] != `put session dev expiry=3600 will=false owner="alice"` {
		t.Fatalf("CONNECT's batch: %q, want the session record with its owner", got)
	}

	var asked []string
	alice := "alice"
	rec := &inflight.Recovered{Sessions: []inflight.RecoveredSession{{Record: inflight.SessionRecord{
		ClientID: "dev", ProtocolVersion: 5, ExpiryInterval: 3600, DisconnectedAt: time.Now().UnixNano(), Owner: &alice},
		Subscriptions: []inflight.SubscriptionRecord{{Filter: "t", QoS: 1}}}}}
	b := New(&fakeJournal{rec: &recorder{}}, rec, Options{MayRead: func(id, user, topic string) bool {
		asked = append(asked, id+"/"+user+"/"+topic)
		return true
	}})
	defer b.Close()
	b.PublishLocal(&inflight.Message{Topic: "t", QoS: 1, Payload: []byte("m")}, nil)
	if len(asked) != 1 || asked[0] != "dev/alice/t" {
		t.Errorf("MayRead after restart asked %q, want dev/alice/t", asked)
	}
	var err error
	b.Connect(ConnectRequest{ClientID: "dev", Username: "mallory", ProtocolVersion: 5, ExpiryInterval: 3600},
		&recConn{name: "m", rec: &recorder{}}, func(_ bool, e error) { err = e })
	b.journal.(*fakeJournal).commit()
	if !errors.Is(err, ErrNotOwner) {
		t.Errorf("mallory resuming alice's restored session: %v, want ErrNotOwner", err)
	}
}

// A session stored before sessions had owners (no Owner in its record) belongs to the first
// identity that resumes it: that CONNECT commits the owner with the record, and a later CONNECT
// as someone else is refused.
func TestSessionWithoutOwnerBelongsToFirstResumer(t *testing.T) {
	rec := &inflight.Recovered{Sessions: []inflight.RecoveredSession{{Record: inflight.SessionRecord{
		ClientID: "old", ProtocolVersion: 4, ExpiryInterval: NeverExpire, DisconnectedAt: 1}}}}
	r := &recorder{}
	j := &fakeJournal{rec: r}
	b := New(j, rec, Options{})
	defer b.Close()
	h := &harness{t: t, rec: r, j: j, b: b}

	if _, err := h.connectResult("bob", ConnectRequest{ClientID: "old", Username: "bob", ProtocolVersion: 4, ExpiryInterval: NeverExpire}); err != nil {
		t.Fatalf("first resume of an unowned session: %v", err)
	}
	if got := j.records(); len(got) != 1 || len(got[0]) != 1 || got[0][0] != `put session old expiry=4294967295 will=false owner="bob"` {
		t.Errorf("first resume's batch: %q, want the record with owner bob", got)
	}
	h.settle()
	if _, err := h.connectResult("eve", ConnectRequest{ClientID: "old", Username: "eve", ProtocolVersion: 4, ExpiryInterval: NeverExpire}); !errors.Is(err, ErrNotOwner) {
		t.Errorf("eve after bob claimed it: %v, want ErrNotOwner", err)
	}
}
