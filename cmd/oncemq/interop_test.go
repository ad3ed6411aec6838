package main

// Interop tests: the real mosquitto_pub and mosquitto_sub (Debian package mosquitto-clients,
// 2.0.11 here) against the real oncemq binary, in MQTT 3.1.1 and 5.0. They fail, not skip, when the
// tools are missing.
//
// A live subscriber runs with -d under `stdbuf -oL`, so that its "received SUBACK" debug line
// reaches the test at once: only then does the test publish. Absence is checked with a sentinel,
// never by waiting: a message published after SUBACK (or last) must be the last one received, so
// anything extra shows up before it.

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncemq/oncemq/cmd/internal/oncemqtest"
)

// mosquittoVersions are the -V values the tests run with.
var mosquittoVersions = []string{"mqttv311", "mqttv5"}

const (
	mosquittoTimeout = 10 // seconds, mosquitto_sub -W: a subscriber gives up after this long
	// mosquittoExitTimeout bounds a mosquitto process from the test's side, beyond its own -W.
	mosquittoExitTimeout = 30 * time.Second
	messageFormat        = "MSG|%q|%r|%t|%p" // mosquitto_sub -F: QoS, retain flag, topic, payload
)

// requireMosquitto fails t unless mosquitto_pub, mosquitto_sub and stdbuf are installed.
func requireMosquitto(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"mosquitto_pub", "mosquitto_sub"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found (%v): the interop tests need the mosquitto clients; install them with: apt-get install -y mosquitto-clients", tool, err)
		}
	}
	if _, err := exec.LookPath("stdbuf"); err != nil {
		t.Fatalf("stdbuf not found (%v): the interop tests need it to read mosquitto_sub's output line by line; it is in coreutils", err)
	}
}

// mosquittoPub runs mosquitto_pub against b and fails t if it does not succeed. mosquitto_pub
// returns once its QoS 1/2 flow is complete.
func mosquittoPub(t *testing.T, b *oncemqtest.Broker, version string, args ...string) {
	t.Helper()
	argv := append([]string{"-h", b.Host, "-p", b.Port, "-V", version}, args...)
	cmd := exec.Command("mosquitto_pub", argv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start mosquitto_pub: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("mosquitto_pub %q: %v\n%s", argv, err, out.String())
		}
	case <-time.After(mosquittoExitTimeout):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("mosquitto_pub %q did not finish within %v\n%s", argv, mosquittoExitTimeout, out.String())
	}
}

// mqttMessage is one message printed by mosquitto_sub.
type mqttMessage struct {
	QoS     string
	Retain  string
	Topic   string
	Payload string
}

func (m mqttMessage) String() string {
	return fmt.Sprintf("%s(q%s r%s %q)", m.Topic, m.QoS, m.Retain, m.Payload)
}

// mosquittoSub is a running mosquitto_sub.
type mosquittoSub struct {
	argv       []string
	cmd        *exec.Cmd
	subscribed chan struct{} // closed at the first "received SUBACK"
	exited     chan struct{} // closed once Wait returned; err is set then
	err        error
	stderr     bytes.Buffer // read only after exited

	mu   sync.Mutex // guards the following
	out  []string   // stdout lines, debug output included
	msgs []mqttMessage
}

// startMosquittoSub runs mosquitto_sub against b with -d, -F messageFormat and args, and waits
// until it has its SUBACK: what is published from then on matches its subscription.
func startMosquittoSub(t *testing.T, b *oncemqtest.Broker, version string, args ...string) *mosquittoSub {
	t.Helper()
	argv := append([]string{"-oL", "mosquitto_sub", "-h", b.Host, "-p", b.Port, "-V", version, "-d", "-F", messageFormat}, args...)
	s := &mosquittoSub{argv: argv[1:], subscribed: make(chan struct{}), exited: make(chan struct{})}
	s.cmd = exec.Command("stdbuf", argv...)
	s.cmd.Stderr = &s.stderr
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start mosquitto_sub: %v", err)
	}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stdout)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.out = append(s.out, line)
			if f := strings.SplitN(line, "|", 5); len(f) == 5 && f[0] == "MSG" {
				s.msgs = append(s.msgs, mqttMessage{QoS: f[1], Retain: f[2], Topic: f[3], Payload: f[4]})
			}
			s.mu.Unlock()
			if strings.Contains(line, "received SUBACK") {
				once.Do(func() { close(s.subscribed) })
			}
		}
	}()
	go func() {
		<-scanned
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	})
	select {
	case <-s.subscribed:
	case <-s.exited:
		t.Fatalf("mosquitto_sub %q exited before SUBACK: %v\n%s", s.argv, s.err, s.output())
	case <-time.After(mosquittoExitTimeout):
		t.Fatalf("mosquitto_sub %q had no SUBACK within %v\n%s", s.argv, mosquittoExitTimeout, s.output())
	}
	return s
}

// output is everything the subscriber printed so far.
func (s *mosquittoSub) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := strings.Join(s.out, "\n")
	select {
	case <-s.exited:
		out += "\nstderr: " + s.stderr.String()
	default:
	}
	return out
}

// wait waits for the subscriber to exit after its -C count and returns the messages it printed. A
// timeout (-W) or any other failure fails t.
func (s *mosquittoSub) wait(t *testing.T) []mqttMessage {
	t.Helper()
	select {
	case <-s.exited:
	case <-time.After(mosquittoExitTimeout):
		t.Fatalf("mosquitto_sub %q still running after %v\n%s", s.argv, mosquittoExitTimeout, s.output())
	}
	s.mu.Lock()
	msgs := slices.Clone(s.msgs)
	s.mu.Unlock()
	if s.err != nil {
		t.Fatalf("mosquitto_sub %q: %v (exit 27 is its -W timeout) after receiving %v\n%s", s.argv, s.err, msgs, s.output())
	}
	return msgs
}

// checkMessages fails t unless got holds exactly want, in any order: mosquitto hands a QoS 2
// message to the application at PUBREL and a QoS 1 message at once, so mixed QoS can interleave.
func checkMessages(t *testing.T, got []mqttMessage, want ...mqttMessage) {
	t.Helper()
	sorted := func(ms []mqttMessage) []string {
		var s []string
		for _, m := range ms {
			s = append(s, m.String())
		}
		slices.Sort(s)
		return s
	}
	if g, w := sorted(got), sorted(want); !slices.Equal(g, w) {
		t.Fatalf("mosquitto_sub received %v, want exactly %v", g, w)
	}
}

// QoS 0, 1 and 2 from mosquitto_pub reach a live mosquitto_sub subscribed at QoS 2, each once, at
// the QoS it was published with [MQTT-3.8.4-8], in publishing order, in 3.1.1 and 5.0.
func TestInteropMosquittoQoS(t *testing.T) {
	requireMosquitto(t)
	t.Parallel()
	b := startBroker(t, t.TempDir(), nil)
	for _, version := range mosquittoVersions {
		for _, qos := range []string{"0", "1", "2"} {
			t.Run(version+"/qos"+qos, func(t *testing.T) {
				t.Parallel()
				topic := "interop/" + version + "/qos" + qos
				sub := startMosquittoSub(t, b, version, "-i", "sub-"+version+"-q"+qos, "-q", "2", "-t", topic,
					"-C", "3", "-W", fmt.Sprint(mosquittoTimeout))
				var want []mqttMessage
				for i := range 3 {
					payload := fmt.Sprintf("%s-q%s-%d", version, qos, i)
					mosquittoPub(t, b, version, "-q", qos, "-t", topic, "-m", payload)
					want = append(want, mqttMessage{QoS: qos, Retain: "0", Topic: topic, Payload: payload})
				}
				if got := sub.wait(t); !slices.Equal(got, want) {
					t.Fatalf("mosquitto_sub received %v, want %v in this order", got, want)
				}
			})
		}
	}
}

// A retained message reaches a later subscriber with the retain flag [MQTT-3.3.1-6]; mosquitto_pub
// -r -n clears it [MQTT-3.3.1-10], so the next subscriber's first message is a live one.
func TestInteropMosquittoRetained(t *testing.T) {
	requireMosquitto(t)
	t.Parallel()
	b := startBroker(t, t.TempDir(), nil)
	for _, version := range mosquittoVersions {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			topic := "interop/" + version + "/retained"
			mosquittoPub(t, b, version, "-q", "1", "-r", "-t", topic, "-m", "keep")
			sub := startMosquittoSub(t, b, version, "-q", "1", "-t", topic, "-C", "1", "-W", fmt.Sprint(mosquittoTimeout))
			checkMessages(t, sub.wait(t), mqttMessage{QoS: "1", Retain: "1", Topic: topic, Payload: "keep"})

			mosquittoPub(t, b, version, "-q", "1", "-r", "-n", "-t", topic) // QoS 1: done once PUBACK is back
			sub = startMosquittoSub(t, b, version, "-q", "1", "-t", topic, "-C", "1", "-W", fmt.Sprint(mosquittoTimeout))
			mosquittoPub(t, b, version, "-q", "1", "-t", topic, "-m", "live")
			checkMessages(t, sub.wait(t), mqttMessage{QoS: "1", Retain: "0", Topic: topic, Payload: "live"})
		})
	}
}

// A persistent subscriber (mosquitto_sub -c -i ID -q 2) that is offline misses the QoS 1 and 2
// messages published meanwhile; when it reconnects it gets exactly those, once each
// [MQTT-3.1.2-5] [MQTT-4.5.0-1] (checklist B12).
func TestInteropMosquittoPersistentSession(t *testing.T) {
	requireMosquitto(t)
	t.Parallel()
	b := startBroker(t, t.TempDir(), nil)
	for _, version := range mosquittoVersions {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			testPersistentSubscriber(t, b, version, nil)
		})
	}
}

// The same across `kill -9` of the broker while the subscriber is offline, some messages published
// before the kill and some after the restart (the guarantee in docs/ARCHITECTURE.md).
func TestInteropMosquittoPersistentSessionAcrossCrash(t *testing.T) {
	requireMosquitto(t)
	t.Parallel()
	for _, version := range mosquittoVersions {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, t.TempDir(), nil)
			testPersistentSubscriber(t, b, version, func() *oncemqtest.Broker {
				b.Kill()
				return b.Restart(t, nil)
			})
		})
	}
}

// testPersistentSubscriber subscribes a persistent session and disconnects it, publishes while it
// is offline (calling crash, if not nil, halfway: it returns the broker to go on with), then
// reconnects the session and checks it gets exactly what it missed.
func testPersistentSubscriber(t *testing.T, b *oncemqtest.Broker, version string, crash func() *oncemqtest.Broker) {
	id := "persistent-" + version
	topic := "interop/" + version + "/persistent"
	sessionArgs := []string{"-c", "-i", id, "-q", "2", "-t", topic}
	// A message before the session exists, then the session's first connection: it gets nothing.
	mosquittoPub(t, b, version, "-q", "2", "-t", topic, "-m", "before")
	startMosquittoSub(t, b, version, append(sessionArgs, "-E")...).wait(t)

	var want []mqttMessage
	publish := func(qos, payload string) {
		mosquittoPub(t, b, version, "-q", qos, "-t", topic, "-m", payload)
		want = append(want, mqttMessage{QoS: qos, Retain: "0", Topic: topic, Payload: payload})
	}
	publish("2", "offline-1")
	publish("1", "offline-2")
	if crash != nil {
		b = crash()
	}
	publish("2", "offline-3")

	// Reconnect: the queued messages come at once; the sentinel, published after SUBACK, comes last.
	sub := startMosquittoSub(t, b, version, append(sessionArgs, "-C", fmt.Sprint(len(want)+1), "-W", fmt.Sprint(mosquittoTimeout))...)
	publish("2", sentinel)
	checkMessages(t, sub.wait(t), want...)
}
