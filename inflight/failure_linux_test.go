package inflight

import (
	"errors"
	"os"
	"reflect"
	"syscall"
	"testing"
)

// A write with no room is ErrDiskFull, and the file heals by reopening it: a journal closed after
// the failure and opened again, once writes succeed, holds exactly what was committed before the
// failure, and commits again.
//
// The failure is the kernel's: the descriptor the log is written through is swapped for one on /dev/full,
// whose every write fails with ENOSPC, as on a full file system.
func TestDiskFullIsRecoverableByReopening(t *testing.T) {
	failures := make(chan error, 4)
	j, _, path := openTest(t, "", &Options{OnFail: func(err error) { failures <- err }})
	if err := commit(t, j, sessionBatch("c", 1)); err != nil {
		t.Fatalf("commit before the disk fills: %v", err)
	}
	heal := swapDescriptor(t, logPath(path), devFull, os.O_WRONLY)
	err := commit(t, j, sessionBatch("c", 2))
	if !errors.Is(err, ErrFailed) || !errors.Is(err, ErrDiskFull) || errors.Is(err, ErrIO) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("commit on a full disk: err = %v, want ErrFailed and ErrDiskFull wrapping ENOSPC", err)
	}
	if err := <-failures; !errors.Is(err, ErrDiskFull) {
		t.Errorf("OnFail got %v, want ErrDiskFull", err)
	}
	heal()
	if err := j.Close(); !errors.Is(err, ErrDiskFull) {
		t.Errorf("Close of the failed journal = %v, want its failure", err)
	}

	j2, rec, _ := openTest(t, path, nil)
	s := session(rec, "c")
	if s == nil || !reflect.DeepEqual(s.Inbound, []InboundRecord{{PacketID: 1}}) {
		t.Fatalf("after reopening: %+v, want inbound id 1 only: the failed commit is not in the file", s)
	}
	if err := commit(t, j2, inboundBatch("c", 3)); err != nil {
		t.Errorf("commit after reopening: %v", err)
	}
}

// sessionBatch records a durable session and one inbound id for it.
func sessionBatch(clientID string, id uint16) *Batch {
	b := inboundBatch(clientID, id)
	b.PutSession(SessionRecord{ClientID: clientID, ExpiryInterval: neverExpires, DisconnectedAt: 1})
	return b
}

// devFull is the Linux device whose every write fails with ENOSPC.
const devFull = "/dev/full"
