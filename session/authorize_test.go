package session

import (
	"fmt"
	"sync"
	"testing"
)

// readPolicy is an Options.MayRead that lets only alice read, records every question, and checks
// that it is asked under Broker.mu.
type readPolicy struct {
	t     *testing.T
	b     *Broker
	mu    sync.Mutex
	asked []string
}

func (p *readPolicy) mayRead(clientID, username, topic string) bool {
	if p.b.mu.TryLock() {
		p.b.mu.Unlock()
		p.t.Error("MayRead called without Broker.mu held")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, fmt.Sprintf("%s/%s/%s", clientID, username, topic))
	return username == "alice"
}

func (p *readPolicy) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	a := p.asked
	p.asked = nil
	return a
}

func newPolicyHarness(t *testing.T) (*harness, *readPolicy) {
	p := &readPolicy{t: t}
	h := newHarness(t, Options{MayRead: p.mayRead})
	p.b = h.b
	return h, p
}

func connectUser(h *harness, id, username string) (*Session, *recConn) {
	return h.connectAs(ConnectRequest{ClientID: id, Username: username, ProtocolVersion: 5, CleanStart: true, ExpiryInterval: 3600})
}

// Options.MayRead is asked for every matching session when a message is routed; a session it
// refuses gets nothing and the refusal is counted. A publish no session may read is answered
// "no matching subscribers".
func TestMayReadAtRouting(t *testing.T) {
	h, p := newPolicyHarness(t)
	a, aC := connectUser(h, "a", "alice")
	h.subscribe(a, aC, "t", 1)
	e, eC := connectUser(h, "e", "eve")
	h.subscribe(e, eC, "t", 1)
	h.subscribe(e, eC, "eve/only", 1)
	pub, pubC := h.connect("pub", 0, 0)

	h.publish(pub, pubC, "t", "m", 1, 1)
	h.commitExpect("publish on t", "submit #1", "commit #1", "pub <- PUBACK id=1 Success",
		"a <- PUBLISH id=1 qos=1 dup=false retain=false t m")
	if got := p.take(); len(got) != 2 || !(got[0] == "e/eve/t" || got[1] == "e/eve/t") {
		t.Errorf("MayRead asked %q, want a/alice/t and e/eve/t", got)
	}

	h.publish(pub, pubC, "eve/only", "m", 1, 2)
	h.commitExpect("publish only eve subscribed to", "submit #1", "commit #1", "pub <- PUBACK id=2 No matching subscribers")
	if n := h.b.Metrics.NotAuthorized.Load(); n != 2 {
		t.Errorf("NotAuthorized = %d, want 2", n)
	}

	// The username is the session's owner: a CONNECT as another user does not change it.
	h.b.Connect(ConnectRequest{ClientID: "e", Username: "alice", ProtocolVersion: 5, ExpiryInterval: 3600},
		&recConn{name: "e2", rec: h.rec}, func(bool, error) {})
	h.settle()
	p.take()
	h.publish(pub, pubC, "eve/only", "m", 1, 3)
	if got := p.take(); len(got) != 1 || got[0] != "e/eve/eve/only" {
		t.Errorf("after alice's refused CONNECT, MayRead asked %q, want e/eve/eve/only", got)
	}
}

// Retained messages sent on SUBSCRIBE are checked too: the subscription is granted (refusing it is
// the caller's decision), but what the session may not read is not sent.
func TestMayReadAtRetainedDelivery(t *testing.T) {
	h, p := newPolicyHarness(t)
	h.publishLocal("t", "kept", 1, true)
	h.settle()

	e, eC := connectUser(h, "e", "eve")
	h.b.Subscribe(e, eC, 1, []SubscriptionRequest{{Filter: "#", QoS: 1}})
	h.commitExpect("eve subscribes", "submit #1", "commit #1", "e <- SUBACK id=1 [1]")
	if got := p.take(); len(got) != 1 || got[0] != "e/eve/t" {
		t.Errorf("MayRead asked %q, want e/eve/t", got)
	}

	a, aC := connectUser(h, "a", "alice")
	h.b.Subscribe(a, aC, 1, []SubscriptionRequest{{Filter: "#", QoS: 1}})
	h.commitExpect("alice subscribes", "submit #1", "commit #1", "a <- SUBACK id=1 [1]",
		"a <- PUBLISH id=1 qos=1 dup=false retain=true t kept")
	if n := h.b.Metrics.NotAuthorized.Load(); n != 1 {
		t.Errorf("NotAuthorized = %d, want 1", n)
	}
}
