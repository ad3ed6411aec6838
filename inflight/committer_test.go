package inflight

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// holdWriteLock holds the committer's next log append, as a slow disk would: the committer's next
// commit waits for it. The returned function lets it go; so does the test's end, before the
// journal is closed. It must be called while the committer is idle.
func holdWriteLock(t *testing.T, j *Journal) (release func()) {
	t.Helper()
	gate := make(chan struct{})
	seg := j.wal.segs[j.wal.cur]
	seg.file = &gatedLog{logFile: seg.file, gate: gate}
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	return release
}

// gatedLog is a log file whose writes wait for gate to close.
type gatedLog struct {
	logFile
	gate chan struct{}
}

func (g *gatedLog) Write(p []byte) (int, error) {
	<-g.gate
	return g.logFile.Write(p)
}

// waitTaken waits until the committer has taken every batch submitted so far into its round.
func waitTaken(t *testing.T, j *Journal) {
	t.Helper()
	for range 30_000 {
		j.mu.Lock()
		n := len(j.pending)
		j.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the committer did not take the submitted batches within 30s")
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

// Batches submitted while a commit waits on the disk go into the next commit, all of them: 1,001
// batches, 2 commits. Submit never waits for the disk.
func TestGroupCommit(t *testing.T) {
	j, _, _ := openTest(t, "", nil)
	release := holdWriteLock(t, j)

	first := make(chan error, 1)
	j.Submit(inboundBatch("first", 1), func(err error) { first <- err })
	waitTaken(t, j) // the committer holds the first batch and waits for the write lock

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
	submitted.Wait() // Submit returned for all of them while the committer was blocked: it never blocks
	release()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	st := j.Stats()
	if st.Commits != 2 || st.Batches != 1+submitters*each || st.Ops != 1+submitters*each {
		t.Errorf("Stats = %+v, want %d batches in 2 commits", st, 1+submitters*each)
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

// A batch the format cannot hold is refused alone: a valid batch in the same commit is committed,
// and the journal goes on.
func TestInvalidBatchIsRefusedAlone(t *testing.T) {
	j, _, _ := openTest(t, "", nil)
	release := holdWriteLock(t, j)
	first := make(chan error, 1)
	j.Submit(inboundBatch("c", 1), func(err error) { first <- err })
	waitTaken(t, j) // the next two batches share the next commit
	bad, good := make(chan error, 1), make(chan error, 1)
	j.Submit(inboundBatch("c", 0), func(err error) { bad <- err })
	j.Submit(inboundBatch("c", 2), func(err error) { good <- err })
	release()
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
