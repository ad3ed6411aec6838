package inflight

// The crash points of a checkpoint, armed like the broker's (ONCEMQ_CRASH_AT=POINT[:N] in a binary
// built with the build tag "failpoint"): the process SIGKILLs itself at the Nth checkpoint that
// reaches the point. A release build compiles them out.
const (
	CrashBeforeCheckpoint = "before-checkpoint" // the log holds batches bbolt does not
	CrashBeforeLogReset   = "before-log-reset"  // bbolt has them too, with the log index
	CrashAfterLogReset    = "after-log-reset"   // the log is empty
)

// CrashPoints lists the crash points of this package.
var CrashPoints = []string{CrashBeforeCheckpoint, CrashBeforeLogReset, CrashAfterLogReset}
