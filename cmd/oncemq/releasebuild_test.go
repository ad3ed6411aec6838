package main

import (
	"strings"
	"testing"
)

// A release build has no crash points (session/internal/failpoint is compiled in only with
// -tags failpoint): ONCEMQ_CRASH_AT=before-pubrec, which kills the failpoint build at the first
// QoS 2 PUBREC (TestCrashBeforePubrec), is ignored. The QoS 2 flow completes, the subscriber gets
// the message once, and the broker is still running.
func TestReleaseBuildIgnoresCrashAt(t *testing.T) {
	t.Parallel()
	b := startBroker(t, t.TempDir(), []string{crashEnv + "=" + crashBeforePubrec})
	sub := dialRaw(t, b.Addr, "subscriber")
	sub.connect(crashSubID, false)
	sub.subscribe(1, crashTopic, 2)
	pub := dialRaw(t, b.Addr, "publisher")
	pub.connect(crashPubID, false)

	pub.publishQoS2(7, "m1") // PUBREC 0x00, then PUBCOMP 0x00: the point did not fire
	pub.publishQoS2(8, sentinel)
	checkOnce(t, sub.receiveUntilSentinel(), "m1")
	pub.sync()
	if !b.Running() {
		t.Fatalf("the release build died: %v", b.Proc().Exit())
	}
	if strings.Contains(b.Log(), "crash point") {
		t.Errorf("the release build read %s:\n%s", crashEnv, b.Log())
	}
}
