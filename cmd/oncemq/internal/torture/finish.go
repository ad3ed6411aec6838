package torture

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// finish fills the report from the clients' state and decides the verdict.
func (t *torture) finish(rep *Report, subs []*subscriber, pubs []*publisher, exp *expectation, shutdown string) *Report {
	if exp == nil {
		exp = expectationOf(pubs) // the publishers have stopped
	}
	for _, p := range pubs {
		rep.PublisherLines = append(rep.PublisherLines, p.res)
	}
	tot := SubscriberResult{Name: "total"}
	lines := make([]SubscriberResult, 0, len(subs)+1)
	for _, s := range subs {
		if s.group != nil {
			lines = append(lines, s.result(noExpectation)) // what it received; the group line checks
		} else {
			lines = append(lines, s.result(exp))
		}
	}
	if t.cfg.Shared > 0 && len(subs) > 0 {
		lines = append(lines, groupResult(subs, exp))
	}
	for _, r := range lines {
		rep.SubscriberLines = append(rep.SubscriberLines, r)
		tot.Expected += r.Expected
		tot.Delivered += r.Delivered
		if r.Name != groupLine { // the members' distinct messages are the group's
			tot.Distinct += r.Distinct
		}
		tot.Lost += r.Lost
		tot.Duplicated += r.Duplicated
		tot.Unexpected += r.Unexpected
		tot.Corrupt += r.Corrupt
		tot.SessionsLost += r.SessionsLost
		tot.ProtocolErrors += r.ProtocolErrors
		tot.Connections += r.Connections
		tot.Takeovers += r.Takeovers
		tot.TakenOverNoted += r.TakenOverNoted
		tot.Redeliveries += r.Redeliveries
		tot.AwaitingPubrel += r.AwaitingPubrel
		tot.QoS1Redeliveries += r.QoS1Redeliveries
		tot.Leaves += r.Leaves
	}
	rep.Totals = tot
	t.mu.Lock()
	rep.KillLog = slices.Clone(t.killLog)
	died := t.died
	failures := slices.Clone(t.failures)
	t.mu.Unlock()
	for _, k := range rep.KillLog {
		if !k.Final {
			rep.Kills++
		}
	}
	rep.Restarts = len(rep.KillLog)
	rep.BrokerDied = died
	if rep.DurationSeconds == 0 {
		rep.DurationSeconds = time.Since(t.start).Seconds()
	}
	if rep.PublishSeconds > 0 {
		rep.MessagesPerSecond = float64(t.cfg.Publishers*t.cfg.Messages) / rep.PublishSeconds
	}
	if d := rep.PublishSeconds + rep.DrainSeconds; d > 0 {
		rep.DeliveriesPerSecond = float64(tot.Delivered) / d
	}
	pass, why := verdict(rep.SubscriberLines, rep.PublisherLines, died, strings.Join(failures, "; "))
	if len(subs) == 0 && pass {
		pass, why = false, []string{"no subscriber ran"}
	}
	rep.Pass, rep.Failures = pass, why
	if rep.Kills < t.cfg.Kills && pass {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("only %d of %d kills happened", rep.Kills, t.cfg.Kills))
	}
	if shutdown != "" {
		rep.Warnings = append(rep.Warnings, "broker "+shutdown)
	}
	if tot.AwaitingPubrel > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d deliveries still await PUBREL at the end", tot.AwaitingPubrel))
	}
	if !pass && t.broker != nil {
		rep.BrokerLogTail = t.broker.tail(40)
	}
	return rep
}
