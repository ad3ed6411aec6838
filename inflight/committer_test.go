package inflight

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// gate makes the first commit wait inside its transaction until release is closed, so that a test
// can line batches up behind it: they then all go into the next commit.
type gate struct {
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	calls   int
	after   func(call int) error // result of calls after the first
}

func newGate(after func(call int) error) *gate {
	return &gate{entered: make(chan struct{}), release: make(chan struct{}), after: after}
}

func (g *gate) hook() error {
	g.mu.Lock()
	g.calls++
	call := g.calls
	g.mu.Unlock()
	if call == 1 {
		close(g.entered)
		<-g.release
		return nil
	}
	if g.after != nil {
		return g.after(call)
	}
	return nil
}

func (g *gate) callCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls
}

func inboundBatch(clientID string, id uint16) *Batch {
	var b Batch
	b.PutInbound(clientID, id, 0)
	return &b
}

func TestDoneInSubmissionOrder(t *testing.T) {
	j, _, _ := openTest(t, "", nil)
	const submitters, each = 50, 40

	var (
		submitMu sync.Mutex // plays the session lock: submission order is the order under it
		next     int
		doneMu   sync.Mutex
		order    []int
		errs     []error
		wg       sync.WaitGroup
	)
	wg.Add(submitters * each)
	for s := range submitters {
		go func() {
			for i := range each {
				var b *Batch
				switch i % 4 {
				case 0:
					b = nil // barrier
				case 1:
					b = &Batch{} // barrier
				default:
					b = inboundBatch(fmt.Sprintf("client-%d", s), uint16(i+1))
				}
				submitMu.Lock()
				n := next
				next++
				j.Submit(b, func(err error) {
					doneMu.Lock()
					order = append(order, n)
					if err != nil {
						errs = append(errs, err)
					}
					doneMu.Unlock()
					wg.Done()
				})
				submitMu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d batches failed, first: %v", len(errs), errs[0])
	}
	for i, n := range order {
		if n != i {
			t.Fatalf("done #%d was for submission %d: callbacks out of order", i, n)
		}
	}
	if st := j.Stats(); st.Batches != submitters*each || st.Ops != submitters*each/2 {
		t.Errorf("Stats = %+v, want %d batches, %d ops", st, submitters*each, submitters*each/2)
	}
}

func TestGroupCommit(t *testing.T) {
	j, _, _ := openTest(t, "", nil)
	g := newGate(nil)
	j.failCommit = g.hook

	first := make(chan error, 1)
	j.Submit(inboundBatch("first", 1), func(err error) { first <- err })
	<-g.entered // the first commit is running and holds the committer

	const submitters, each = 50, 20
	var wg, submitted sync.WaitGroup
	wg.Add(submitters * each)
	submitted.Add(submitters)
	for s := range submitters {
		go func() {
			defer submitted.Done()
			for i := range each {
				j.Submit(inboundBatch(fmt.Sprintf("c%d", s), uint16(i+1)), func(err error) {
					if err != nil {
						t.Errorf("batch: %v", err)
					}
					wg.Done()
				})
			}
		}()
	}
	submitted.Wait() // Submit returned for all of them while the committer was busy: it never blocks
	close(g.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	st := j.Stats()
	if st.Commits != 2 || st.Batches != 1+submitters*each || st.Ops != 1+submitters*each {
		t.Errorf("Stats = %+v, want 2 commits of %d batches", st, 1+submitters*each)
	}
}

func TestEmptyBatchesSkipTheTransaction(t *testing.T) {
	j, _, _ := openTest(t, "", nil)
	mustCommit(t, j, nil)
	mustCommit(t, j, &Batch{})
	if st := j.Stats(); st != (Stats{Batches: 2}) {
		t.Errorf("Stats = %+v, want 2 batches and no commit", st)
	}
}

func TestCommitFailureFailsTheRoundAndAfter(t *testing.T) {
	boom := errors.New("disk on fire")
	j, _, path := openTest(t, "", nil)
	g := newGate(func(int) error { return boom })
	j.failCommit = g.hook

	results := make([]chan error, 5)
	for i := range results {
		results[i] = make(chan error, 1)
	}
	first := inboundBatch("c", 1)
	first.PutSession(SessionRecord{ClientID: "c", ExpiryInterval: neverExpires, DisconnectedAt: 1})
	j.Submit(first, func(err error) { results[0] <- err })
	<-g.entered
	j.Submit(inboundBatch("c", 2), func(err error) { results[1] <- err })
	j.Submit(nil, func(err error) { results[2] <- err }) // a barrier in the failing round
	j.Submit(inboundBatch("c", 3), func(err error) { results[3] <- err })
	close(g.release)

	if err := <-results[0]; err != nil {
		t.Fatalf("first round: %v", err)
	}
	for i := 1; i <= 3; i++ {
		err := <-results[i]
		if !errors.Is(err, ErrFailed) || !errors.Is(err, boom) {
			t.Errorf("batch %d of the failing round: err = %v, want ErrFailed wrapping the cause", i, err)
		}
	}
	if err := j.Err(); !errors.Is(err, ErrFailed) || !errors.Is(err, boom) {
		t.Errorf("Err() = %v", err)
	}

	j.Submit(inboundBatch("c", 4), func(err error) { results[4] <- err })
	if err := <-results[4]; !errors.Is(err, ErrFailed) || !errors.Is(err, boom) {
		t.Errorf("Submit after failure: err = %v, want ErrFailed", err)
	}
	if err := commit(t, j, nil); !errors.Is(err, ErrFailed) {
		t.Errorf("barrier after failure: err = %v, want ErrFailed", err)
	}
	if n := g.callCount(); n != 2 {
		t.Errorf("%d commits attempted, want 2: a failed journal does not touch the file", n)
	}
	if err := j.Close(); !errors.Is(err, ErrFailed) {
		t.Errorf("Close of a failed journal = %v, want the failure", err)
	}

	// The file holds exactly what was acknowledged.
	_, rec, _ := openTest(t, path, nil)
	s := session(rec, "c")
	if s == nil || !reflect.DeepEqual(s.Inbound, []InboundRecord{{PacketID: 1}}) {
		t.Errorf("after restart: %+v, want only the first round's inbound id 1", s)
	}
}

func TestInvalidBatchIsRefusedAlone(t *testing.T) {
	j, _, _ := openTest(t, "", nil)
	g := newGate(nil)
	j.failCommit = g.hook
	first := make(chan error, 1)
	j.Submit(inboundBatch("c", 1), func(err error) { first <- err })
	<-g.entered
	bad, good := make(chan error, 1), make(chan error, 1)
	j.Submit(inboundBatch("c", 0), func(err error) { bad <- err })
	j.Submit(inboundBatch("c", 2), func(err error) { good <- err })
	close(g.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-bad; !errors.Is(err, ErrInvalidBatch) {
		t.Errorf("packet id 0: err = %v, want ErrInvalidBatch", err)
	}
	if err := <-good; err != nil {
		t.Errorf("valid batch in the same round: %v", err)
	}
	if err := j.Err(); err != nil {
		t.Errorf("journal failed by an invalid batch: %v", err)
	}

	for name, b := range map[string]func(*Batch){
		"empty client id":   func(b *Batch) { b.PutSession(SessionRecord{}) },
		"NUL in client id":  func(b *Batch) { b.DeleteSession("a\x00b") },
		"empty filter":      func(b *Batch) { b.PutSubscription("c", SubscriptionRecord{}) },
		"message seq 0":     func(b *Batch) { b.PutMessage(&Message{Topic: "t"}) },
		"bad topic":         func(b *Batch) { b.PutMessage(&Message{Seq: 1, Topic: "\xff"}) },
		"QoS 3":             func(b *Batch) { b.PutRetained(&Message{Topic: "t", QoS: 3}) },
		"outbound state 0":  func(b *Batch) { b.PutOutbound("c", OutboundRecord{PacketID: 1}) },
		"negative sub id":   func(b *Batch) { b.PutQueued("c", QueuedRecord{SubIDs: []int{-1}}) },
		"queued QoS 3":      func(b *Batch) { b.PutQueued("c", QueuedRecord{QoS: 3}) },
		"will without msg":  func(b *Batch) { b.PutSession(SessionRecord{ClientID: "c", Will: &Will{}}) },
		"delete message 0":  func(b *Batch) { b.DeleteMessage(0) },
		"delete outbound 0": func(b *Batch) { b.DeleteOutbound("c", 0) },
	} {
		var batch Batch
		b(&batch)
		if err := commit(t, j, &batch); !errors.Is(err, ErrInvalidBatch) {
			t.Errorf("%s: err = %v, want ErrInvalidBatch", name, err)
		}
	}
}

func TestClose(t *testing.T) {
	j, _, path := openTest(t, "", nil)

	// Close commits what was submitted before it.
	var wg sync.WaitGroup
	const n = 200
	wg.Add(n)
	var b Batch
	b.PutSession(SessionRecord{ClientID: "c", ExpiryInterval: neverExpires, DisconnectedAt: 1})
	j.Submit(&b, nil) // a nil done is allowed
	for i := range n {
		j.Submit(inboundBatch("c", uint16(i+1)), func(err error) {
			if err != nil {
				t.Errorf("batch before Close: %v", err)
			}
			wg.Done()
		})
	}
	if err := j.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wg.Wait()
	if err := j.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	// After Close, done gets ErrClosed, in order, and never from inside Submit: the caller holds
	// its lock, which the callback takes.
	var mu sync.Mutex
	var got []int
	var wg2 sync.WaitGroup
	wg2.Add(10)
	mu.Lock()
	for i := range 10 {
		j.Submit(inboundBatch("c", 1), func(err error) {
			mu.Lock()
			defer mu.Unlock()
			if !errors.Is(err, ErrClosed) {
				t.Errorf("Submit after Close: err = %v, want ErrClosed", err)
			}
			got = append(got, i)
			wg2.Done()
		})
	}
	mu.Unlock()
	wg2.Wait()
	for i, v := range got {
		if v != i {
			t.Fatalf("callbacks after Close out of order: %v", got)
		}
	}

	_, rec, _ := openTest(t, path, nil)
	if s := session(rec, "c"); s == nil || len(s.Inbound) != n {
		t.Errorf("after Close and reopen: %+v", s)
	}
}

func TestPanicInDoneIsContained(t *testing.T) {
	logs := &logBuffer{}
	j, _, _ := openTest(t, "", &Options{Logger: testLogger(logs)})
	j.Submit(inboundBatch("c", 1), func(error) { panic("callback bug") })
	if err := commit(t, j, inboundBatch("c", 2)); err != nil {
		t.Fatalf("batch after a panicking callback: %v", err)
	}
	if out := logs.String(); !strings.Contains(out, "callback bug") || !strings.Contains(out, "level=ERROR") {
		t.Errorf("panic not logged:\n%s", out)
	}
}
