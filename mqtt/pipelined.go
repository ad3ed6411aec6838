package mqtt

import (
	"bufio"

	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/oncemq/oncemq/session"
)

// heldPacket is a packet read before the CONNACK was queued that must be handled after it: a
// pipelined SUBSCRIBE that turned out invalid, whose error closes the connection, or the read
// error itself.
type heldPacket struct {
	pk  packets.Packet
	err error
}

// readPipelinedSubscribes reads the SUBSCRIBEs the client sent right behind its CONNECT, as far as
// they are already whole in the read buffer (no wait, at most one buffer's worth), and returns them
// for the session layer to apply with the CONNECT.
//
// Why: a client that connects and subscribes at once expects its subscription to take effect as
// soon as the broker has read it, and test suites publish from another client as soon as that one
// sees a SUBACK of its own. Handled after the CONNECT's commit, the SUBSCRIBE was read a goroutine
// hand-off too late and such a PUBLISH was often missed; applied with the CONNECT, under the same
// lock and in the same batch, it is in the subscription index before anything committed after the
// CONNECT is acknowledged (docs/ARCHITECTURE.md "Where the code departs from DESIGN.md").
//
// The first packet that is not a whole valid SUBSCRIBE ends the reading; an invalid SUBSCRIBE is
// held for the reader to handle, and answer, after the CONNACK [MQTT-3.2.0-1].
func (c *conn) readPipelinedSubscribes() []session.PipelinedSubscribe {
	var subs []session.PipelinedSubscribe
	for c.held == nil && wholeSubscribeBuffered(c.br) {
		pk, err := c.readPacket()
		if err != nil {
			c.held = &heldPacket{pk: pk, err: err}
			break
		}
		reqs, err := c.subscriptionRequests(&pk)
		if err != nil {
			c.held = &heldPacket{pk: pk}
			break
		}
		subs = append(subs, session.PipelinedSubscribe{PacketID: pk.PacketID, Requests: reqs})
	}
	return subs
}

// wholeSubscribeBuffered reports whether br holds a whole SUBSCRIBE packet at its start.
func wholeSubscribeBuffered(br *bufio.Reader) bool {
	if br == nil || br.Buffered() < 2 {
		return false
	}
	b, _ := br.Peek(br.Buffered())
	if b[0]>>4 != packets.Subscribe {
		return false
	}
	n, shift := 0, 0
	for i := 1; i < len(b) && i <= 4; i++ {
		n |= int(b[i]&0x7F) << shift
		shift += 7
		if b[i] < 0x80 {
			return i+1+n <= len(b)
		}
	}
	return false
}
