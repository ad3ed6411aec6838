//go:build !failpoint

package failpoint

import "github.com/mochi-mqtt/server/v2/packets"

// Enabled reports whether this binary was built with crash points.
const Enabled = false

// BeforeSend does nothing: this build has no crash points.
func BeforeSend(*packets.Packet) {}
