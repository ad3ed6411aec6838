//go:build !failpoint

package inflight

// SyncFailEnv names the variable that, in a binary built with the build tag "failpoint", makes a
// sync fail. This build has no such point and never reads it.
const SyncFailEnv = "ONCEMQ_FAIL_FSYNC"

// syncFailpoint does nothing: this build has no failpoints.
func syncFailpoint() error { return nil }
