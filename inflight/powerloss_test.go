package inflight

// The power-loss test of the journal. The log is written through recordingLog (powerdisk_test.go),
// which keeps, beside the bytes written, the bytes a sync covered; the bbolt file is copied after
// each of its commits, all synced. A power loss at any point of the run is then rebuilt: the log is
// what the last sync covered, plus none, all or a torn part of what was written after it; the bbolt
// file is the copy of its last commit. Open recovers from those two files, and the state it reads
// must be the state after some prefix of the submitted batches that contains every acknowledged
// one: nothing acknowledged is lost, no batch is half there, and none is there without the ones
// before it. The same disk under a whole broker and real MQTT clients: powerloss_mqtt_test.go.

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// model is the state the batches describe, in the keys canonical() prints.
type model map[string]string

func (m model) canonical() string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		keys = append(keys, k+"="+v)
	}
	slices.Sort(keys)
	return strings.Join(keys, "\n")
}

// step is one batch and what it does to the model.
type step struct {
	batch *Batch
	apply func(model)
}

// qos2Workload is what the session layer writes for n QoS 2 messages from "pub" to "sub", in
// flows that overlap as a window of in-flight messages does: accept (message, inbound id, queue
// entry, dedup id), PUBREL (inbound id freed), delivery (queue entry to outbound id), PUBREC
// (outbound id to PUBREL sent, message freed), PUBCOMP (outbound id freed). Some messages are
// also retained, and every tenth flow replaces a subscription and ages a dedup id out.
func qos2Workload(rng *rand.Rand, n int) []step {
	setup := &Batch{}
	setup.PutSession(SessionRecord{ClientID: "pub", ProtocolVersion: 5, ExpiryInterval: neverExpires})
	setup.PutSession(SessionRecord{ClientID: "sub", ProtocolVersion: 5, ExpiryInterval: neverExpires})
	setup.PutSubscription("sub", SubscriptionRecord{Filter: "t/#", QoS: 2})
	steps := []step{{setup, func(m model) {
		m["sess/pub"], m["sess/sub"], m["subs/sub/t/#"] = "", "", "2"
	}}}
	flows := make([][]step, 0, n)
	for i := 1; i <= n; i++ {
		seq, pid := uint64(i), uint16(i)
		msg := &Message{Seq: seq, Topic: fmt.Sprintf("t/%d", i%7), Payload: fmt.Appendf(nil, "payload %d", i), QoS: 2, Created: int64(i)}
		dedup := DedupKey(DedupScopeClient, "pub", fmt.Sprint(i))
		var flow []step
		b := &Batch{}
		b.PutMessage(msg)
		b.PutInbound("pub", pid, 0)
		b.PutQueued("sub", QueuedRecord{Order: seq, QoS: 2, MsgSeq: seq, SubIDs: []int{i % 3}})
		b.PutDedup(DedupRecord{Key: dedup, At: int64(i)})
		retain := i%5 == 0
		if retain {
			b.PutRetained(msg)
		}
		flow = append(flow, step{b, func(m model) {
			m[fmt.Sprintf("msg/%d", seq)] = string(msg.Payload)
			m[fmt.Sprintf("in/pub/%d", pid)] = ""
			m[fmt.Sprintf("queue/sub/%d", seq)] = fmt.Sprint(seq)
			m["dedup/"+dedup] = ""
			if retain {
				m["retained/"+msg.Topic] = string(msg.Payload)
			}
		}})
		b = &Batch{}
		b.DeleteInbound("pub", pid)
		flow = append(flow, step{b, func(m model) { delete(m, fmt.Sprintf("in/pub/%d", pid)) }})
		b = &Batch{}
		b.DeleteQueued("sub", seq)
		b.PutOutbound("sub", OutboundRecord{PacketID: pid, State: PublishSent, QoS: 2, Order: seq, MsgSeq: seq})
		flow = append(flow, step{b, func(m model) {
			delete(m, fmt.Sprintf("queue/sub/%d", seq))
			m[fmt.Sprintf("out/sub/%d", pid)] = fmt.Sprintf("1/%d/%d", seq, seq)
		}})
		b = &Batch{}
		b.PutOutbound("sub", OutboundRecord{PacketID: pid, State: PubrelSent, QoS: 2, Order: seq})
		b.DeleteMessage(seq)
		flow = append(flow, step{b, func(m model) {
			m[fmt.Sprintf("out/sub/%d", pid)] = fmt.Sprintf("2/%d/0", seq)
			delete(m, fmt.Sprintf("msg/%d", seq))
		}})
		b = &Batch{}
		b.DeleteOutbound("sub", pid)
		if i%10 == 0 {
			b.DeleteSubscription("sub", "t/#")
			b.PutSubscription("sub", SubscriptionRecord{Filter: "t/#", QoS: byte(i/10) % 3})
			b.DeleteDedup(dedup)
			b.DeleteRetained(msg.Topic)
		}
		flow = append(flow, step{b, func(m model) {
			delete(m, fmt.Sprintf("out/sub/%d", pid))
			if i%10 == 0 {
				m["subs/sub/t/#"] = fmt.Sprint(byte(i/10) % 3)
				delete(m, "dedup/"+dedup)
				delete(m, "retained/"+msg.Topic)
			}
		}})
		flows = append(flows, flow)
	}
	// Interleave: up to 16 flows in flight, each advancing in its own order.
	var live [][]step
	for len(flows) > 0 || len(live) > 0 {
		for len(live) < 16 && len(flows) > 0 {
			live, flows = append(live, flows[0]), flows[1:]
		}
		k := rng.IntN(len(live))
		steps = append(steps, live[k][0])
		if live[k] = live[k][1:]; len(live[k]) == 0 {
			live = slices.Delete(live, k, k+1)
		}
	}
	return steps
}

// recoveredModel prints the recovered state in the model's keys, each body read through j.
func recoveredModel(t *testing.T, j *Journal, rec *Recovered) model {
	m := model{}
	for _, s := range rec.Sessions {
		m["sess/"+s.Record.ClientID] = ""
		for _, sub := range s.Subscriptions {
			m["subs/"+s.Record.ClientID+"/"+sub.Filter] = fmt.Sprint(sub.QoS)
		}
		for _, in := range s.Inbound {
			m[fmt.Sprintf("in/%s/%d", s.Record.ClientID, in.PacketID)] = ""
		}
		for _, q := range s.Queue {
			m[fmt.Sprintf("queue/%s/%d", s.Record.ClientID, q.Order)] = fmt.Sprint(q.MsgSeq)
		}
		for _, o := range s.Outbound {
			m[fmt.Sprintf("out/%s/%d", s.Record.ClientID, o.PacketID)] = fmt.Sprintf("%d/%d/%d", o.State, o.Order, o.MsgSeq)
		}
	}
	for _, h := range rec.Messages {
		m[fmt.Sprintf("msg/%d", h.Seq)] = string(loadMessage(t, j, h.Seq).Payload)
	}
	for _, msg := range rec.Retained {
		m["retained/"+msg.Topic] = string(msg.Payload)
	}
	for _, d := range rec.Dedup {
		m["dedup/"+d.Key] = ""
	}
	return m
}

// runRecorded runs the workload on a journal whose log is recorded, with checkpoints every few
// records so that the run crosses many of them. It returns the recorder and the model's state
// after each prefix of the steps.
func runRecorded(t *testing.T, steps []step, noSync bool) (*recorder, []string) {
	t.Helper()
	r := newRecorder(true)
	opts := &Options{NoSync: noSync, Now: func() int64 { return 1 }, Logger: testLogger(&logBuffer{})}
	opts.wal = walOptions{
		openFile:     r.open,
		onBoltCommit: r.snapshot,
		maxRecords:   3,
		maxBytes:     2 << 10,
	}
	j, _, err := Open(testPath(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	window := make(chan struct{}, 6) // batches submitted and not yet acknowledged
	errs := make(chan error, len(steps))
	for _, s := range steps {
		window <- struct{}{}
		j.Submit(s.batch, func(err error) {
			if err != nil {
				errs <- err
			}
			r.ack()
			<-window
		})
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	prefixes := make([]string, 0, len(steps)+1)
	m := model{}
	prefixes = append(prefixes, m.canonical())
	for _, s := range steps {
		s.apply(m)
		prefixes = append(prefixes, m.canonical())
	}
	return r, prefixes
}

// loseAndRecover rebuilds the files of a power loss at state st, keeping keep bytes of what was
// written after the last sync of each segment, opens them, and checks the state against the
// prefixes.
func loseAndRecover(t *testing.T, r *recorder, st diskState, keep int, prefixes []string) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "oncemq.db")
	unsynced, err := st.writeFiles(db, r.snapshots[st.snapshot], keep)
	if err != nil {
		t.Fatal(err)
	}
	// The recovery reads the files above; what it writes to the log after is not checked here,
	// so the log is opened in memory, which spares preallocating it hundreds of times.
	opts := &Options{Now: func() int64 { return 2 }, Logger: testLogger(&logBuffer{})}
	opts.wal.openFile = func(string) (logFile, error) { return &memLog{}, nil }
	j, rec, err := Open(db, opts)
	if err != nil {
		t.Fatalf("power loss after %q (%d acknowledged, %d of %d unsynced bytes kept): Open: %v", st.what, st.acks, keep, unsynced, err)
	}
	defer j.Close()
	got := recoveredModel(t, j, rec).canonical()
	for k := len(prefixes) - 1; k >= st.acks; k-- {
		if prefixes[k] == got {
			return
		}
	}
	for k := st.acks - 1; k >= 0; k-- {
		if prefixes[k] == got {
			t.Fatalf("power loss after %q: %d batches acknowledged, but the recovered state is that after %d: acknowledged batches lost", st.what, st.acks, k)
		}
	}
	t.Fatalf("power loss after %q (%d acknowledged, %d of %d unsynced bytes kept): the recovered state is no prefix of the batches (a batch half there):\n%s",
		st.what, st.acks, keep, unsynced, got)
}

// Every acknowledged batch survives a power loss at every sync of the log (each commit boundary)
// and at random points between, the torn tail of an unsynced write included; no batch is half
// applied; the checkpoints between (bbolt commits, log resets) lose nothing either.
func TestPowerLossKeepsEveryAcknowledgedBatch(t *testing.T) {
	seeds, flows, random := []uint64{1, 2, 3}, 80, 60
	if testing.Short() {
		seeds, random = seeds[:1], 10
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			r, prefixes := runRecorded(t, qos2Workload(rng, flows), false)
			checkpoints := len(r.snapshots) - 1
			if checkpoints < 5 {
				t.Fatalf("only %d checkpoints in the run: the test would not cross them", checkpoints)
			}
			tried := 0
			for _, st := range r.states {
				// Every commit boundary: after each sync and after each bbolt commit.
				if st.what == "sync" || st.what == "bbolt commit" {
					loseAndRecover(t, r, st, 0, prefixes)
					tried++
				}
			}
			for range random {
				st := r.states[rng.IntN(len(r.states))]
				keep := 0
				if n := max(len(st.logs[0].unsynced), len(st.logs[1].unsynced)); n > 0 {
					keep = rng.IntN(n + 1) // a torn write, or all of it, or none
				}
				loseAndRecover(t, r, st, keep, prefixes)
				tried++
			}
			t.Logf("%d batches, %d log events, %d checkpoints, %d power losses recovered", len(prefixes)-1, len(r.states), checkpoints, tried)
		})
	}
}
