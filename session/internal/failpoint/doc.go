// Package failpoint holds the crash points of the broker: the places, between a commit and the packet
// that commit allows, where a crash test makes the process die as `kill -9` would. Each point is named
// after the packet that has not left yet (before-pubrec, before-puback, before-pubcomp,
// before-publish, before-pubrel).
//
// The points exist only in a binary built with the build tag "failpoint" (go build -tags failpoint),
// the way bbolt compiles its gofail points in only for its failpoint tests. In every other build
// BeforeSend is an empty function the compiler removes, and ONCEMQ_CRASH_AT is never read: a
// release binary cannot be told to crash.
//
// In a failpoint build, ONCEMQ_CRASH_AT=POINT[:N] arms one point: the process sends itself SIGKILL
// at the Nth hit of POINT (default 1). A value that names no point stops the process at start with
// a message listing the points.
package failpoint

import "github.com/oncemq/oncemq/inflight"

// Env is the environment variable that arms a crash point in a failpoint build.
const Env = "ONCEMQ_CRASH_AT"

// The crash points, each named after the packet that has not been sent yet when it fires.
const (
	BeforePubrec  = "before-pubrec"  // inbound QoS 2 id and fan-out committed
	BeforePuback  = "before-puback"  // inbound QoS 1 fan-out committed
	BeforePubcomp = "before-pubcomp" // inbound id removal committed
	BeforePublish = "before-publish" // outbound id and message recorded
	BeforePubrel  = "before-pubrel"  // outbound id moved to "PUBREL sent"
)

// Points lists every crash point: those before a packet, fired here, then the store's, inside a
// checkpoint of its log, which the inflight package fires from the same variable.
var Points = append([]string{BeforePubrec, BeforePuback, BeforePubcomp, BeforePublish, BeforePubrel},
	inflight.CrashPoints...)
