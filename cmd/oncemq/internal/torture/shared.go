package torture

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/oncemq/oncemq/cmd/oncemq/internal/mqttclient"
)

// Shared mode (--shared S): the subscribers are S members of one shared subscription group,
// $share/torture/torture/#, and the group as a whole must receive every acknowledged message
// exactly once: the union of what the members received is checked, not each member. Members leave
// gracefully now and then, one at a time so that the group always has a member: UNSUBSCRIBE,
// complete what they were sent (every PUBREL answered), DISCONNECT, then after a pause reconnect
// and subscribe again. See README "Shared subscriptions".

const (
	tortureShareFilter = "$share/torture/" + tortureFilter
	unsubscribeID      = 2
	groupLine          = "group" // the name of the group's line in the report
	// leaveQuiet is how long a leaving member waits with nothing outstanding and no PUBLISH
	// before it sends DISCONNECT: a delivery already on its way arrives in that time.
	leaveQuiet = 50 * time.Millisecond
)

// shareGroup is what the members of the group share.
type shareGroup struct {
	leaveEvery time.Duration
	leaving    atomic.Bool // a member is leaving: the others stay
}

// memberTimers are the tickers of a member's run loop; nil channels for a plain subscriber.
type memberTimers struct {
	leave, poll <-chan time.Time
	stop        func()
}

func (s *subscriber) memberTimers() memberTimers {
	if s.group == nil || s.group.leaveEvery <= 0 {
		return memberTimers{stop: func() {}}
	}
	lt := time.NewTicker(s.group.leaveEvery + time.Duration(s.rng.Int64N(int64(s.group.leaveEvery))))
	pt := time.NewTicker(10 * time.Millisecond)
	return memberTimers{leave: lt.C, poll: pt.C, stop: func() { lt.Stop(); pt.Stop() }}
}

// startLeave begins a graceful leave on c if no other member is leaving: UNSUBSCRIBE.
func (s *subscriber) startLeave(c *mqttclient.Conn) {
	if !s.isSubscribed() || !s.group.leaving.CompareAndSwap(false, true) {
		return
	}
	s.mu.Lock()
	s.subscribed, s.leaving, s.unsubscribed, s.rejoining = false, true, false, true
	s.mu.Unlock()
	unsub := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Unsubscribe, Qos: 1}, PacketID: unsubscribeID,
		Filters: packets.Subscriptions{{Filter: tortureShareFilter}}}
	_ = c.Write(unsub) // a failed write ends the connection: the reconnect subscribes again
}

// leaveReady reports whether a leaving member may DISCONNECT: UNSUBACK received, every QoS 2
// delivery complete, and no PUBLISH for leaveQuiet.
func (s *subscriber) leaveReady() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leaving && s.unsubscribed && len(s.awaiting) == 0 && time.Since(s.lastPublish) >= leaveQuiet
}

// finishLeave sends DISCONNECT on c, waits for the broker to close it, and pauses before the
// member comes back. False if ctx ended.
func (s *subscriber) finishLeave(ctx context.Context, c *mqttclient.Conn, lost <-chan error) bool {
	s.mu.Lock()
	s.leaving = false
	s.res.Leaves++
	s.mu.Unlock()
	_ = c.Write(mqttclient.Disconnect(0))
	select {
	case <-lost:
	case <-time.After(time.Second):
	}
	c.Close()
	pause := time.NewTimer(time.Duration(50+rand.IntN(200)) * time.Millisecond)
	defer pause.Stop()
	select {
	case <-pause.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// handleMember handles what only a member gets: UNSUBACK, and the SUBACK that ends a leave.
// Caller holds s.mu.
func (s *subscriber) handleMember(pk packets.Packet) {
	switch pk.FixedHeader.Type {
	case packets.Unsuback:
		if pk.PacketID != unsubscribeID {
			s.protocolError("unexpected %s", mqttclient.Describe(pk))
		}
		s.unsubscribed = true
	case packets.Suback:
		if s.group != nil && s.rejoining {
			s.rejoining = false
			s.group.leaving.Store(false)
		}
	}
}

// groupTally merges the members' tallies: what the group received. Each member is locked in turn;
// call it for the drain and the report, not per message.
func groupTally(members []*subscriber) *tally {
	g := newTally(members[0].tally.pubs, members[0].tally.perPub)
	by := make(map[msgKey][]string)
	for _, s := range members {
		s.mu.Lock()
		t := s.tally
		g.delivered += t.delivered
		g.corrupt += t.corrupt
		g.redelivery += t.redelivery
		for p := range t.counts {
			for q, n := range t.counts[p] {
				if n == 0 {
					continue
				}
				g.counts[p][q] += n
				if !g.first[p][q].valid {
					g.first[p][q] = t.first[p][q]
				}
				by[msgKey{p, q}] = append(by[msgKey{p, q}], fmt.Sprintf("%s x%d", s.res.Name, n))
			}
		}
		s.mu.Unlock()
	}
	for p := range g.counts {
		for q, n := range g.counts[p] {
			if n == 0 {
				continue
			}
			g.distinct++
			if n > 1 {
				g.duplicated += int(n) - 1
				if len(g.dupSamples) < maxSamples {
					g.dupSamples = append(g.dupSamples, fmt.Sprintf("%v delivered %d times to the group: %v", msgKey{p, q}, n, by[msgKey{p, q}]))
				}
			}
		}
	}
	return g
}

// noExpectation expects nothing: a member's own line counts what it received; the group's line
// holds the expectation.
var noExpectation = &expectation{}

// groupResult is the group's line of the report: the members' union against what was expected.
// Duplicates across members count here (and a member's own duplicates in its line too).
func groupResult(members []*subscriber, exp *expectation) SubscriberResult {
	r := groupTally(members).result(exp)
	r.Name, r.ClientID = groupLine, tortureShareFilter
	// Counted in the members' lines already; the totals add the lines.
	r.Delivered, r.Corrupt, r.QoS1Redeliveries = 0, 0, 0
	own := 0
	for _, s := range members {
		s.mu.Lock()
		own += s.tally.duplicated
		s.mu.Unlock()
	}
	r.Duplicated -= own // the members' own duplicates are in their lines
	return r
}
