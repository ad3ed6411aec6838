package torture

import (
	"fmt"
	"io"
	"slices"
)

// printReport writes the human report.
func printReport(w io.Writer, rep *Report) {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-12s %9s %9s %9s %6s %10s %7s %8s %7s %9s %9s\n", "subscriber", "expected", "delivered", "distinct",
		"lost", "duplicated", "corrupt", "sessions", "proto", "connects", "takeovers")
	fmt.Fprintf(w, "%-12s %9s %9s %9s %6s %10s %7s %8s %7s %9s %9s\n", "", "", "", "", "", "", "", "lost", "errors", "", "")
	line := func(r SubscriberResult) {
		fmt.Fprintf(w, "%-12s %9d %9d %9d %6d %10d %7d %8d %7d %9d %9d\n", r.Name, r.Expected, r.Delivered, r.Distinct,
			r.Lost, r.Duplicated, r.Corrupt, r.SessionsLost, r.ProtocolErrors, r.Connections, r.Takeovers)
	}
	for _, r := range rep.SubscriberLines {
		line(r)
	}
	line(rep.Totals)
	for _, r := range rep.SubscriberLines {
		if r.Lost > 0 {
			fmt.Fprintf(w, "  %s lost: %s\n", r.Name, sampleList(r.LostSample, r.Lost))
		}
		for _, d := range r.DupSample {
			fmt.Fprintf(w, "  %s duplicate: %s\n", r.Name, d)
		}
		for _, e := range r.ErrorSample {
			fmt.Fprintf(w, "  %s: %s\n", r.Name, e)
		}
	}
	var published, completed, refused, resentPub, resentRel, pubLost, pubErr int
	for _, p := range rep.PublisherLines {
		published += p.Messages
		completed += p.Completed
		refused += p.Refused
		resentPub += p.ResentPublish
		resentRel += p.ResentPubrel
		pubLost += p.SessionsLost
		pubErr += p.ProtocolErrors
	}
	fmt.Fprintf(w, "publishers: %d messages, %d completed, %d refused; resent %d PUBLISH and %d PUBREL; sessions lost %d, protocol errors %d\n",
		published, completed, refused, resentPub, resentRel, pubLost, pubErr)
	for _, p := range rep.PublisherLines {
		for _, e := range append(slices.Clone(p.RefusedSample), p.ErrorSample...) {
			fmt.Fprintf(w, "  %s: %s\n", p.Name, e)
		}
	}
	if rep.Totals.QoS1Redeliveries > 0 {
		fmt.Fprintf(w, "QoS 1 redeliveries by the broker (DUP=1, same packet id; not duplicates): %d\n", rep.Totals.QoS1Redeliveries)
	}
	if rep.Shared > 0 {
		fmt.Fprintf(w, "shared subscription group of %d members: %d graceful leaves (UNSUBSCRIBE, complete, DISCONNECT, back)\n", rep.Shared, rep.Totals.Leaves)
	}
	if rep.Totals.Takeovers > 0 {
		fmt.Fprintf(w, "takeovers: %d (DISCONNECT 0x8E seen on %d old connections)\n", rep.Totals.Takeovers, rep.Totals.TakenOverNoted)
	}
	died := "no"
	if rep.BrokerDied != "" {
		died = rep.BrokerDied
	}
	fmt.Fprintf(w, "broker: %d kills, %d restarts, died on its own: %s\n", rep.Kills, rep.Restarts, died)
	fmt.Fprintf(w, "duration %.2fs: publish %.2fs (%.0f msg/s acknowledged), drain %.2fs, %.0f deliveries/s\n",
		rep.DurationSeconds, rep.PublishSeconds, rep.MessagesPerSecond, rep.DrainSeconds, rep.DeliveriesPerSecond)
	for _, wn := range rep.Warnings {
		fmt.Fprintf(w, "warning: %s\n", wn)
	}
	if rep.BrokerLogTail != "" {
		fmt.Fprintf(w, "broker log (last lines):\n%s\n", rep.BrokerLogTail)
	}
	if rep.TempDir != "" {
		fmt.Fprintf(w, "kept %s (data/, broker.log)\n", rep.TempDir)
	}
	if rep.Pass {
		fmt.Fprintf(w, "PASS (seed %d)\n", rep.Seed)
		return
	}
	fmt.Fprintf(w, "FAIL (seed %d)\n", rep.Seed)
	for _, f := range rep.Failures {
		fmt.Fprintf(w, "  - %s\n", f)
	}
}
