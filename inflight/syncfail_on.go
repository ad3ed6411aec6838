//go:build failpoint

package inflight

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
)

// SyncFailEnv names the variable that arms the sync failpoint of a binary built with the build
// tag "failpoint" (as the crash points of session/internal/failpoint are): ONCEMQ_FAIL_FSYNC=PATH
// makes the first commit after the file PATH appears fail as a failed fdatasync does, with EIO, so
// that a test can choose the moment from outside the process. A release build never reads it.
const SyncFailEnv = "ONCEMQ_FAIL_FSYNC"

// syncFail is the trigger file read from SyncFailEnv at start; "" when the point is not armed.
var syncFail = os.Getenv(SyncFailEnv)

// syncFailed: the point has fired; it fires once.
var syncFailed atomic.Bool

// syncFailpoint returns, once the trigger file exists, the error bbolt's Tx.Commit returns when
// fdatasync fails: the bare errno (bbolt does not wrap it). The commit is then not made, as in
// bbolt, where a failed fdatasync of the data pages comes before the meta page is written.
func syncFailpoint() error {
	if syncFail == "" || syncFailed.Load() {
		return nil
	}
	if _, err := os.Stat(syncFail); err != nil {
		return nil
	}
	if !syncFailed.CompareAndSwap(false, true) {
		return nil
	}
	fmt.Fprintf(os.Stderr, "oncemq: failpoint %s: this commit's fdatasync fails with EIO\n", SyncFailEnv)
	return syscall.EIO
}
