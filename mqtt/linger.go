package mqtt

import (
	"time"
)

// A DISCONNECT the broker sends is followed by a half-close and a short drain before the socket
// is closed: a client still writing (past its Receive Maximum, say) would otherwise get a reset,
// and lose the DISCONNECT that says why, because closing a socket with unread bytes resets it.
const (
	lingerTime  = time.Second            // the longest the drain lasts
	lingerQuiet = 100 * time.Millisecond // a client silent this long has stopped writing
	lingerBytes = 64 << 10               // the most the drain reads
)

// linger runs on the writer after it wrote a DISCONNECT: it stops the reader from handling more
// (a read deadline in the past wakes it; serve closes readerDone when it stops), half-closes the
// connection where it can (TCP, TLS), and reads and discards what the client still sends until it
// closes its side, is quiet for lingerQuiet, or lingerTime or lingerBytes is reached.
func (c *conn) linger() {
	cw, ok := c.nc.(interface{ CloseWrite() error })
	if !ok {
		return // WebSocket: the close frame does this job
	}
	end := time.Now().Add(lingerTime)
	kick := time.NewTicker(10 * time.Millisecond)
	defer kick.Stop()
	for stopped := false; !stopped; {
		// Again and again: the reader may set its own deadline after seeing nothing closing.
		_ = c.nc.SetReadDeadline(time.Now())
		select {
		case <-c.readerDone:
			stopped = true
		case <-kick.C:
			if time.Now().After(end) {
				return
			}
		}
	}
	if cw.CloseWrite() != nil {
		return
	}
	var buf [4096]byte
	for read := 0; read < lingerBytes; {
		deadline := time.Now().Add(lingerQuiet)
		if deadline.After(end) {
			deadline = end
		}
		_ = c.nc.SetReadDeadline(deadline)
		n, err := c.nc.Read(buf[:])
		read += n
		if err != nil {
			return
		}
	}
}
