package inflight

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"syscall"
	"testing"
)

// A commit that fails on the disk fails every batch of its round and every batch after it, the
// journal stays failed even once the disk works again (it does not touch the file), and the file
// holds exactly what was acknowledged. A write that fails for another reason than space is ErrIO,
// and OnFail hears of the failure once.
//
// The failure is a real one: the descriptor the log is written through is swapped, under the journal, for a
// read-only one on the same file, so the commit's write fails with EBADF from the kernel.
func TestCommitFailureFailsTheRoundAndAfter(t *testing.T) {
	failures := make(chan error, 4)
	j, _, path := openTest(t, "", &Options{OnFail: func(err error) { failures <- err }})
	results := make([]chan error, 5)
	for i := range results {
		results[i] = make(chan error, 1)
	}

	// The first round commits; its callback holds the committer while the next round lines up.
	inCallback, release := make(chan struct{}), make(chan struct{})
	first := inboundBatch("c", 1)
	first.PutSession(SessionRecord{ClientID: "c", ExpiryInterval: neverExpires, DisconnectedAt: 1})
	j.Submit(first, func(err error) {
		results[0] <- err
		close(inCallback)
		<-release
	})
	<-inCallback
	if err := <-results[0]; err != nil {
		t.Fatalf("first round: %v", err)
	}
	j.Submit(inboundBatch("c", 2), func(err error) { results[1] <- err })
	j.Submit(nil, func(err error) { results[2] <- err }) // a barrier in the failing round
	j.Submit(inboundBatch("c", 3), func(err error) { results[3] <- err })
	heal := breakDescriptor(t, logPath(path))
	close(release)

	for i := 1; i <= 3; i++ {
		err := <-results[i]
		if !errors.Is(err, ErrFailed) || !errors.Is(err, ErrIO) || errors.Is(err, ErrDiskFull) || !errors.Is(err, syscall.EBADF) {
			t.Errorf("batch %d of the failing round: err = %v, want ErrFailed and ErrIO wrapping the write's EBADF", i, err)
		}
	}
	if got := len(failures); got != 1 {
		t.Errorf("OnFail called %d times, want once", got)
	} else if err := <-failures; !errors.Is(err, ErrIO) {
		t.Errorf("OnFail got %v, want ErrIO", err)
	}
	if err := j.Err(); !errors.Is(err, ErrFailed) {
		t.Errorf("Err() = %v", err)
	}

	heal() // the disk works again; the journal does not, until a restart reads back what is there
	j.Submit(inboundBatch("c", 4), func(err error) { results[4] <- err })
	if err := <-results[4]; !errors.Is(err, ErrFailed) {
		t.Errorf("Submit after failure: err = %v, want ErrFailed", err)
	}
	if err := commit(t, j, nil); !errors.Is(err, ErrFailed) {
		t.Errorf("barrier after failure: err = %v, want ErrFailed", err)
	}
	if err := j.Close(); !errors.Is(err, ErrFailed) {
		t.Errorf("Close of a failed journal = %v, want the failure", err)
	}

	// The file holds exactly what was acknowledged: inbound id 1, not 2 and 3 (refused by the
	// disk) nor 4 (refused by the failed journal, which would have written it on the healed disk).
	_, rec, _ := openTest(t, path, nil)
	s := session(rec, "c")
	if s == nil || !reflect.DeepEqual(s.Inbound, []InboundRecord{{PacketID: 1}}) {
		t.Errorf("after restart: %+v, want only the first round's inbound id 1", s)
	}
}

// breakDescriptor replaces the descriptor through which this process writes path by a read-only
// one on the same file, under the same number, so that every write through it fails with EBADF as
// on a failing disk. (Closing the descriptor would do the same, but its number could then be reused
// by a file the test opens next.) heal puts a writable descriptor back under that number.
func breakDescriptor(t *testing.T, path string) (heal func()) {
	t.Helper()
	return swapDescriptor(t, path, path, os.O_RDONLY)
}

// swapDescriptor puts a descriptor on other, opened with flag, under the number through which this
// process writes path; heal puts a writable descriptor on path back.
func swapDescriptor(t *testing.T, path, other string, flag int) (heal func()) {
	t.Helper()
	fd := descriptorOf(t, path)
	swap := func(name string, flag int) {
		f, err := os.OpenFile(name, flag, 0)
		if err != nil {
			t.Fatalf("open %s: %v", name, err)
		}
		defer f.Close()
		if err := syscall.Dup3(int(f.Fd()), fd, syscall.O_CLOEXEC); err != nil {
			t.Fatalf("dup3 onto descriptor %d: %v", fd, err)
		}
	}
	swap(other, flag)
	return func() { swap(path, os.O_RDWR) }
}

// descriptorOf finds the one descriptor of this process open on path.
func descriptorOf(t *testing.T, path string) int {
	t.Helper()
	want, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	found := -1
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil || target != want {
			continue
		}
		if found != -1 {
			t.Fatalf("%s is open twice in this process", path)
		}
		if found, err = strconv.Atoi(e.Name()); err != nil {
			t.Fatal(err)
		}
	}
	if found == -1 {
		t.Fatalf("no descriptor of this process is open on %s", path)
	}
	return found
}
