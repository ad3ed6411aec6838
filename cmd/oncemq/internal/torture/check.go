package torture

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The torture's payload: publisher index and sequence number (big-endian uint32 each), then
// padding bytes derived from both, so that a corrupted or misrouted payload is recognised.
const payloadHeader = 8

// encodePayload builds the payload of message seq of publisher pub, size bytes long
// (at least payloadHeader).
func encodePayload(pub, seq, size int) []byte {
	b := make([]byte, max(size, payloadHeader))
	binary.BigEndian.PutUint32(b[0:], uint32(pub))
	binary.BigEndian.PutUint32(b[4:], uint32(seq))
	for i := payloadHeader; i < len(b); i++ {
		b[i] = padByte(pub, seq, i)
	}
	return b
}

func padByte(pub, seq, i int) byte { return byte(pub*131 + seq*31 + i) }

var errBadPayload = errors.New("payload is not a torture message")

// decodePayload returns the publisher index and sequence number of a payload made by
// encodePayload, checking its padding.
func decodePayload(b []byte) (pub, seq int, err error) {
	if len(b) < payloadHeader {
		return 0, 0, fmt.Errorf("%w: %d bytes", errBadPayload, len(b))
	}
	pub = int(binary.BigEndian.Uint32(b[0:]))
	seq = int(binary.BigEndian.Uint32(b[4:]))
	for i := payloadHeader; i < len(b); i++ {
		if b[i] != padByte(pub, seq, i) {
			return pub, seq, fmt.Errorf("%w: byte %d is corrupt", errBadPayload, i)
		}
	}
	return pub, seq, nil
}

// msgKey names one published message.
type msgKey struct{ pub, seq int }

func (k msgKey) String() string { return fmt.Sprintf("p%d#%d", k.pub, k.seq) }

// delivery is where and when a subscriber counted a message, to explain a duplicate.
type delivery struct {
	id    uint16        // packet identifier of the PUBLISH
	dup   bool          // its DUP flag
	conn  int           // the subscriber's connection number (1 = first)
	run   int           // the broker's run number (1 = first start; each restart adds one)
	at    time.Duration // since the torture started
	valid bool
}

func (d delivery) String() string {
	return fmt.Sprintf("id %d dup=%t on connection %d, broker run %d, at %v", d.id, d.dup, d.conn, d.run,
		d.at.Round(time.Millisecond))
}

// maxSamples bounds the lost and duplicated messages listed in a report.
const maxSamples = 20

// tally counts what one subscriber received: every message of every publisher is expected once.
type tally struct {
	pubs, perPub int
	counts       [][]uint32   // [pub][seq]: times counted
	first        [][]delivery // [pub][seq]: the first time

	delivered  int // deliveries counted: first times and duplicates
	distinct   int // messages counted at least once
	duplicated int // deliveries beyond a message's first
	redelivery int // QoS 1 deliveries again with DUP=1 and the first's packet id: QoS 1's own resend
	corrupt    int // deliveries whose payload or topic is not a message of this run
	dupSamples []string
}

func newTally(pubs, perPub int) *tally {
	t := &tally{pubs: pubs, perPub: perPub, counts: make([][]uint32, pubs), first: make([][]delivery, pubs)}
	for i := range t.counts {
		t.counts[i] = make([]uint32, perPub)
		t.first[i] = make([]delivery, perPub)
	}
	return t
}

// add counts one delivery of k and reports whether it is the message's first.
func (t *tally) add(k msgKey, d delivery) bool {
	if k.pub < 0 || k.pub >= t.pubs || k.seq < 0 || k.seq >= t.perPub {
		t.corrupt++
		return false
	}
	t.delivered++
	t.counts[k.pub][k.seq]++
	if t.counts[k.pub][k.seq] == 1 {
		t.distinct++
		d.valid = true
		t.first[k.pub][k.seq] = d
		return true
	}
	t.duplicated++
	if len(t.dupSamples) < maxSamples {
		s := fmt.Sprintf("%v delivered %d times: first %v; again %v", k, t.counts[k.pub][k.seq],
			t.first[k.pub][k.seq], d)
		t.dupSamples = append(t.dupSamples, s)
	}
	return false
}

// addQoS1 counts a QoS 1 delivery of k. A delivery again with DUP=1 and the packet id of the
// first is the broker resending an outbound QoS 1 message it had no PUBACK for (after a restart):
// QoS 1's own at-least-once, counted apart and not as a duplicate. It reports whether this is the
// message's first delivery.
func (t *tally) addQoS1(k msgKey, d delivery) bool {
	if t.has(k) {
		if first := t.first[k.pub][k.seq]; d.dup && d.id == first.id {
			t.redelivery++
			return false
		}
	}
	return t.add(k, d)
}

// addCorrupt counts a delivery that is not a message of this run.
func (t *tally) addCorrupt() { t.corrupt++ }

// has reports whether k was counted.
func (t *tally) has(k msgKey) bool {
	return k.pub >= 0 && k.pub < t.pubs && k.seq >= 0 && k.seq < t.perPub && t.counts[k.pub][k.seq] > 0
}

// missing lists the messages in expected that were never counted (at most limit of them, all if
// limit < 0) and how many there are.
func (t *tally) missing(expected *expectation, limit int) (n int, sample []msgKey) {
	for p := 0; p < t.pubs; p++ {
		for s := 0; s < t.perPub; s++ {
			k := msgKey{p, s}
			if t.counts[p][s] == 0 && expected.has(k) {
				n++
				if limit < 0 || len(sample) < limit {
					sample = append(sample, k)
				}
			}
		}
	}
	return n, sample
}

// unexpected counts the messages counted that the broker had refused.
func (t *tally) unexpected(expected *expectation) int {
	n := 0
	for k := range expected.refused {
		if t.has(k) {
			n++
		}
	}
	return n
}

// expectation is what every subscriber must receive: every message the broker acknowledged with a
// successful PUBREC. In a complete run that is every message of every publisher, minus those the
// broker refused with a PUBREC >= 0x80 (a failure of its own); in an aborted run, what the
// publishers had been promised when it stopped.
type expectation struct {
	acked   [][]bool        // [pub][seq]: a successful PUBREC was received
	refused map[msgKey]byte // message -> reason code of the refusing PUBREC
}

// newExpectation is the expectation of a run in which every message was acknowledged except
// those in refused.
func newExpectation(pubs, perPub int, refused map[msgKey]byte) *expectation {
	e := &expectation{acked: make([][]bool, pubs), refused: refused}
	if e.refused == nil {
		e.refused = map[msgKey]byte{}
	}
	for p := range e.acked {
		e.acked[p] = make([]bool, perPub)
		for s := range e.acked[p] {
			_, r := e.refused[msgKey{p, s}]
			e.acked[p][s] = !r
		}
	}
	return e
}

func (e *expectation) total() int {
	n := 0
	for _, a := range e.acked {
		for _, ok := range a {
			if ok {
				n++
			}
		}
	}
	return n
}

func (e *expectation) has(k msgKey) bool {
	return k.pub >= 0 && k.pub < len(e.acked) && k.seq >= 0 && k.seq < len(e.acked[k.pub]) && e.acked[k.pub][k.seq]
}

// SubscriberResult is one subscriber's line of the report.
type SubscriberResult struct {
	Name           string `json:"name"`
	ClientID       string `json:"client_id"`
	Takeover       bool   `json:"takeover"`
	Expected       int    `json:"expected"`
	Delivered      int    `json:"delivered"`
	Distinct       int    `json:"distinct"`
	Lost           int    `json:"lost"`
	Duplicated     int    `json:"duplicated"`
	Unexpected     int    `json:"unexpected"`
	Corrupt        int    `json:"corrupt"`
	SessionsLost   int    `json:"sessions_lost"`
	ProtocolErrors int    `json:"protocol_errors"`
	Connections    int    `json:"connections"`
	Takeovers      int    `json:"takeovers"`
	TakenOverNoted int    `json:"taken_over_disconnects"`
	Redeliveries   int    `json:"redeliveries"`     // PUBLISH resends of an id awaiting PUBREL: answered, not counted
	Leaves         int    `json:"leaves,omitempty"` // graceful leaves of a shared subscription member
	// QoS 1 deliveries resent by the broker with DUP=1 and the same packet id: QoS 1's own
	// at-least-once, not counted as duplicates.
	QoS1Redeliveries int      `json:"qos1_redeliveries"`
	AwaitingPubrel   int      `json:"awaiting_pubrel"` // at the end: PUBREC sent, PUBREL never came
	LostSample       []string `json:"lost_sample,omitempty"`
	DupSample        []string `json:"duplicated_sample,omitempty"`
	ErrorSample      []string `json:"protocol_error_sample,omitempty"`
}

// result turns a tally into a report line.
func (t *tally) result(expected *expectation) SubscriberResult {
	lost, sample := t.missing(expected, maxSamples)
	r := SubscriberResult{
		Expected:   expected.total(),
		Delivered:  t.delivered,
		Distinct:   t.distinct,
		Lost:       lost,
		Duplicated: t.duplicated,
		Unexpected: t.unexpected(expected),
		Corrupt:    t.corrupt,
		DupSample:  slices.Clone(t.dupSamples),

		QoS1Redeliveries: t.redelivery,
	}
	for _, k := range sample {
		r.LostSample = append(r.LostSample, k.String())
	}
	return r
}

// PublisherResult is one publisher's line of the report.
type PublisherResult struct {
	Name           string   `json:"name"`
	ClientID       string   `json:"client_id"`
	Messages       int      `json:"messages"`
	Completed      int      `json:"completed"` // PUBCOMP received
	Refused        int      `json:"refused"`   // PUBREC >= 0x80
	ResentPublish  int      `json:"resent_publish"`
	ResentPubrel   int      `json:"resent_pubrel"`
	SessionsLost   int      `json:"sessions_lost"`
	ProtocolErrors int      `json:"protocol_errors"`
	Connections    int      `json:"connections"`
	RefusedSample  []string `json:"refused_sample,omitempty"`
	ErrorSample    []string `json:"protocol_error_sample,omitempty"`
}

// verdict decides a run: it passes only if nothing acknowledged was lost or duplicated, every
// session survived, the broker refused nothing and never died on its own. failures says why not.
func verdict(subs []SubscriberResult, pubs []PublisherResult, brokerDied string, aborted string) (pass bool, failures []string) {
	if aborted != "" {
		failures = append(failures, aborted)
	}
	if brokerDied != "" {
		failures = append(failures, "the broker died on its own: "+brokerDied)
	}
	for _, p := range pubs {
		failures = appendCounts(failures, p.Name, []count{
			{p.Refused, "%d PUBLISH refused with PUBREC >= 0x80"},
			{p.SessionsLost, "session lost %d times (CONNACK Session Present 0 on resume)"},
			{p.ProtocolErrors, "%d protocol errors by the broker"},
		})
		if p.Completed+p.Refused < p.Messages {
			failures = append(failures, fmt.Sprintf("%s: only %d of %d messages completed (PUBCOMP)", p.Name, p.Completed, p.Messages))
		}
	}
	for _, s := range subs {
		failures = appendCounts(failures, s.Name, []count{
			{s.Lost, "%d messages lost"},
			{s.Duplicated, "%d messages duplicated"},
			{s.Unexpected, "%d refused messages delivered anyway"},
			{s.Corrupt, "%d corrupt deliveries"},
			{s.SessionsLost, "session lost %d times (CONNACK Session Present 0 on resume)"},
			{s.ProtocolErrors, "%d protocol errors by the broker"},
		})
	}
	return len(failures) == 0, failures
}

// count is a number that fails the run when it is not zero, and how to say so.
type count struct {
	n      int
	format string // with one %d for n
}

// appendCounts adds a failure line, prefixed with name, for each count that is not zero.
func appendCounts(failures []string, name string, counts []count) []string {
	for _, c := range counts {
		if c.n != 0 {
			failures = append(failures, name+": "+fmt.Sprintf(c.format, c.n))
		}
	}
	return failures
}

// sampleList joins samples for a human line.
func sampleList(s []string, total int) string {
	out := strings.Join(s, ", ")
	if total > len(s) {
		out += fmt.Sprintf(", ... (%d more)", total-len(s))
	}
	return out
}
