package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Two real mosquitto_sub processes subscribed to '$share/g/t' share the messages mosquitto_pub
// sends: each message reaches exactly one of them, and both get some (README "Shared
// subscriptions"), in 3.1.1 and 5.0.
func TestInteropMosquittoSharedSubscription(t *testing.T) {
	requireMosquitto(t)
	t.Parallel()
	b := startBroker(t, t.TempDir(), nil)
	for _, version := range mosquittoVersions {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			const total = 20
			topic := "interop/" + version + "/shared"
			filter := "$share/g-" + version + "/" + topic
			members := []*mosquittoSub{
				startMosquittoSub(t, b, version, "-i", "member-1-"+version, "-q", "2", "-t", filter, "-W", "60"),
				startMosquittoSub(t, b, version, "-i", "member-2-"+version, "-q", "2", "-t", filter, "-W", "60"),
			}
			var lines []string
			for i := range total {
				lines = append(lines, fmt.Sprintf("m-%02d", i))
			}
			mosquittoPubLines(t, version, b.Host, b.Port, topic, lines)
			// Sentinels until each member has had one: whatever a member was sent before its
			// sentinel has arrived by then, duplicates included.
			deadline := time.Now().Add(mosquittoExitTimeout)
			for n := 0; !allSawSentinel(members); n++ {
				if time.Now().After(deadline) {
					t.Fatalf("not every member got a sentinel in %v:\n%s\n----\n%s", mosquittoExitTimeout, members[0].output(), members[1].output())
				}
				mosquittoPub(t, b, version, "-q", "2", "-t", topic, "-m", fmt.Sprintf("%s-%d", sentinel, n))
			}
			seen := make(map[string]int)
			for i, m := range members {
				m.mu.Lock()
				own := 0
				for _, msg := range m.msgs {
					if strings.HasPrefix(msg.Payload, sentinel) {
						continue
					}
					if msg.QoS != "2" || msg.Topic != topic {
						t.Errorf("member %d received %v, want QoS 2 on %s", i+1, msg, topic)
					}
					seen[msg.Payload]++
					own++
				}
				m.mu.Unlock()
				if own == 0 {
					t.Errorf("member %d received none of the %d messages: want them spread", i+1, total)
				}
			}
			for _, p := range lines {
				if seen[p] != 1 {
					t.Errorf("%s received %d times by the group, want exactly once", p, seen[p])
				}
			}
			if len(seen) != total {
				t.Errorf("the group received %d distinct messages, want %d", len(seen), total)
			}
		})
	}
}

// allSawSentinel reports whether every member has printed a sentinel message.
func allSawSentinel(members []*mosquittoSub) bool {
	for _, m := range members {
		m.mu.Lock()
		saw := false
		for _, msg := range m.msgs {
			saw = saw || strings.HasPrefix(msg.Payload, sentinel)
		}
		m.mu.Unlock()
		if !saw {
			return false
		}
	}
	return true
}

// mosquittoPubLines publishes each line as a QoS 2 message with one mosquitto_pub -l, which
// returns once every flow is complete.
func mosquittoPubLines(t *testing.T, version, host, port, topic string, lines []string) {
	t.Helper()
	cmd := exec.Command("mosquitto_pub", "-h", host, "-p", port, "-V", version, "-q", "2", "-t", topic, "-l")
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	done := make(chan []byte, 1)
	var err error
	go func() {
		var out []byte
		out, err = cmd.CombinedOutput()
		done <- out
	}()
	select {
	case out := <-done:
		if err != nil {
			t.Fatalf("mosquitto_pub -l: %v\n%s", err, out)
		}
	case <-time.After(mosquittoExitTimeout):
		t.Fatalf("mosquitto_pub -l did not finish within %v", mosquittoExitTimeout)
	}
}

// Messages for a group whose members (persistent mosquitto_sub sessions) are all offline wait in
// the group queue across kill -9 of the broker, and reach the members when they come back, each
// message exactly once over the group.
func TestInteropMosquittoSharedQueueAcrossCrash(t *testing.T) {
	requireMosquitto(t)
	t.Parallel()
	for _, version := range mosquittoVersions {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, t.TempDir(), nil)
			const total = 10
			topic := "interop/" + version + "/shared-crash"
			filter := "$share/g/" + topic
			member := func(i int, extra ...string) *mosquittoSub {
				args := append([]string{"-c", "-i", fmt.Sprintf("crash-member-%d-%s", i, version), "-q", "2", "-t", filter}, extra...)
				return startMosquittoSub(t, b, version, args...)
			}
			member(1, "-E").wait(t) // the sessions and their subscriptions exist; both offline
			member(2, "-E").wait(t)
			var lines []string
			for i := range total {
				lines = append(lines, fmt.Sprintf("c-%02d", i))
			}
			mosquittoPubLines(t, version, b.Host, b.Port, topic, lines)
			b.Kill()
			b = b.Restart(t, nil)
			members := []*mosquittoSub{member(1, "-W", "60"), member(2, "-W", "60")}
			deadline := time.Now().Add(mosquittoExitTimeout)
			for n := 0; !allSawSentinel(members); n++ {
				if time.Now().After(deadline) {
					t.Fatalf("not every member got a sentinel in %v:\n%s\n----\n%s", mosquittoExitTimeout, members[0].output(), members[1].output())
				}
				mosquittoPub(t, b, version, "-q", "2", "-t", topic, "-m", fmt.Sprintf("%s-%d", sentinel, n))
			}
			seen := make(map[string]int)
			for _, m := range members {
				m.mu.Lock()
				for _, msg := range m.msgs {
					if !strings.HasPrefix(msg.Payload, sentinel) {
						seen[msg.Payload]++
					}
				}
				m.mu.Unlock()
			}
			for _, p := range lines {
				if seen[p] != 1 {
					t.Errorf("%s received %d times by the group, want exactly once", p, seen[p])
				}
			}
			if len(seen) != total {
				t.Errorf("the group received %d distinct messages %v, want %d", len(seen), seen, total)
			}
		})
	}
}
