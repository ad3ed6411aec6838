package inflight

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
)

// Inspection is what Inspect read from a data file. It is the file as it is: what the next Open
// would repair or remove is counted, not applied.
type Inspection struct {
	Sessions []InspectedSession // live sessions, in client id order
	Retained int                // retained messages
	Messages int                // stored messages that queues and in-flight entries refer to

	FileSize  int64 // bytes
	PageSize  int   // bytes
	FreePages int   // pages free for reuse: what compaction would give back

	// What the next Open removes: sessions whose expiry passed (or that ended with their
	// connection), entries without a session or whose message is missing, and messages nothing
	// refers to.
	ExpiredSessions []string
	BrokenEntries   int
	Orphans         int
}

// InspectedSession is one session as stored. Record.DisconnectedAt is 0 for a session whose
// client was connected when the broker stopped.
type InspectedSession struct {
	RecoveredSession
	QueuedBytes int // payload bytes of the queued messages
}

// Inspect reads the data file at path through a read-only handle, without changing a byte of it:
// the recovery decoding of Open, without its repairs. now is the current time in unix nanoseconds,
// for session expiry. It fails with ErrInUse while another process, a running broker, holds the
// file, and with ErrCorrupt for a file it cannot decode.
func Inspect(path string, now int64) (*Inspection, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("inspect %s: %w", path, err)
	}
	db, err := openBoltWith(path, true, true, true)
	if err != nil {
		return nil, err
	}
	defer closeQuietly(db)
	r, err := readFile(db, now, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, fmt.Errorf("inspect %s: %w", path, err)
	}
	in := &Inspection{
		Retained: len(r.retained), Messages: len(r.msgs),
		FileSize: st.Size(), PageSize: db.Info().PageSize, FreePages: db.Stats().FreePageN,
		BrokenEntries: r.dropped, Orphans: r.orphans,
	}
	for id := range r.expired {
		in.ExpiredSessions = append(in.ExpiredSessions, id)
	}
	slices.Sort(in.ExpiredSessions)
	for _, s := range r.touched {
		s.Record.DisconnectedAt = 0 // as stored: recovery would set it to now
	}
	for _, s := range r.sessions {
		is := InspectedSession{RecoveredSession: *s}
		for _, q := range s.Queue {
			is.QueuedBytes += int(r.msgs[q.MsgSeq].Payload)
		}
		in.Sessions = append(in.Sessions, is)
	}
	return in, nil
}
