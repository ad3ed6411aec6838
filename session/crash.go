package session

import "github.com/mochi-mqtt/server/v2/packets"

// Crash points: the places, between a commit and the packet it allows, where crash tests make the
// broker die (Options.Crash). Each names the packet that has not left yet.
const (
	CrashBeforePubrec  = "before-pubrec"  // inbound QoS 2 id and fan-out committed
	CrashBeforePuback  = "before-puback"  // inbound QoS 1 fan-out committed
	CrashBeforePubcomp = "before-pubcomp" // inbound id removal committed
	CrashBeforePublish = "before-publish" // outbound id and message recorded
	CrashBeforePubrel  = "before-pubrel"  // outbound id moved to "PUBREL sent"
)

// CrashPoints lists every crash point, for flag validation and tests.
var CrashPoints = []string{CrashBeforePubrec, CrashBeforePuback, CrashBeforePubcomp, CrashBeforePublish, CrashBeforePubrel}

// crashAt calls the test hook, which may end the process. Production runs have no hook.
func (b *Broker) crashAt(point string) {
	if b.opts.Crash != nil {
		b.opts.Crash(point)
	}
}

// crashPointOf names the crash point before sending pk, or "" for packets that promise nothing.
func crashPointOf(pk *packets.Packet) string {
	switch pk.FixedHeader.Type {
	case packets.Pubrec:
		if pk.ReasonCode < 0x80 {
			return CrashBeforePubrec
		}
	case packets.Puback:
		if pk.ReasonCode < 0x80 {
			return CrashBeforePuback
		}
	case packets.Pubcomp:
		return CrashBeforePubcomp
	case packets.Publish:
		if pk.FixedHeader.Qos > 0 {
			return CrashBeforePublish
		}
	case packets.Pubrel:
		return CrashBeforePubrel
	}
	return ""
}
