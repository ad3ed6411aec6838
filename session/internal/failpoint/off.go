//go:build !failpoint

package failpoint

import "github.com/oncemq/oncemq/session/reason"

// Enabled reports whether this binary was built with crash points.
const Enabled = false

// BeforeSend does nothing: this build has no crash points.
func BeforeSend(typ, qos byte, code reason.Code) {}
