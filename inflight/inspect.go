package inflight

import (
	"fmt"
	"log/slog"
	"os"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Inspection is what Inspect read from a data file. It is the file as it is: what the next Open
// would repair or remove is counted, not applied.
type Inspection struct {
	Sessions []InspectedSession // live sessions, in client id order
	Retained int                // retained messages
	Messages int                // stored messages that queues and in-flight entries refer to
	// Shared is the shared subscription groups' queues, by group and filter: waiting, and sent to a
	// member and not yet completed.
	Shared []InspectedGroup

	FileSize  int64 // bytes
	PageSize  int   // bytes
	FreePages int   // pages free for reuse: what compaction would give back

	// The log beside the file: its size, and how many of its records the file does not have
	// yet. The state above includes them, as the next Open will.
	LogBytes   int64
	LogRecords int

	// What the next Open removes: sessions whose expiry passed (or that ended with their
	// connection), entries without a session record, and messages nothing
	// refers to.
	ExpiredSessions []string
	BrokenEntries   int
	Orphans         int

	// Damage lists the records that fail their checksum or cannot be decoded, and those that
	// depend on them. Open refuses a file with any; `oncemq repair` writes one without them.
	Damage []Damage
}

// InspectedGroup is one shared subscription group's queue as stored.
type InspectedGroup struct {
	Group, Filter string
	Waiting, Sent int
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
	_, segs, pending, err := readLogFor(db, path)
	if err != nil {
		return nil, fmt.Errorf("inspect %s: %w", path, err)
	}
	state := db
	if len(pending) > 0 {
		// The state is the file with the log applied, as the next Open sees it; the log is applied
		// to a copy outside the data directory, which is left as it is.
		replayed, err := replayedCopy(db, pending)
		if err != nil {
			return nil, fmt.Errorf("inspect %s: %w", path, err)
		}
		defer func() {
			closeQuietly(replayed)
			_ = os.Remove(replayed.Path())
		}()
		state = replayed
	}
	r, err := readFile(state, now, true, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, fmt.Errorf("inspect %s: %w", path, err)
	}
	in := &Inspection{
		Retained: len(r.retained), Messages: len(r.msgs),
		FileSize: st.Size(), PageSize: db.Info().PageSize, FreePages: db.Stats().FreePageN,
		BrokenEntries: r.dropped, Orphans: r.orphans, Damage: r.damage,
		LogBytes: logSize(segs), LogRecords: len(pending),
	}
	for id := range r.expired {
		in.ExpiredSessions = append(in.ExpiredSessions, id)
	}
	slices.Sort(in.ExpiredSessions)
	for _, rec := range r.shared { // in key order: by group and filter
		n := len(in.Shared)
		if n == 0 || in.Shared[n-1].Group != rec.Group || in.Shared[n-1].Filter != rec.Filter {
			in.Shared = append(in.Shared, InspectedGroup{Group: rec.Group, Filter: rec.Filter})
			n++
		}
		if rec.Waiting() {
			in.Shared[n-1].Waiting++
		} else {
			in.Shared[n-1].Sent++
		}
	}
	for _, s := range r.touched {
		s.Record.DisconnectedAt = 0 // as stored: recovery would set it to now
	}
	for _, s := range r.sessions {
		is := InspectedSession{RecoveredSession: *s}
		for _, q := range s.Queue {
			is.QueuedBytes += int(r.message(q.MsgSeq).Payload)
		}
		in.Sessions = append(in.Sessions, is)
	}
	return in, nil
}

// replayedCopy copies db to a temporary file outside the data directory and applies the log
// records to the copy.
func replayedCopy(db *bolt.DB, pending []logRecord) (*bolt.DB, error) {
	f, err := os.CreateTemp("", "oncemq-inspect-*.db")
	if err != nil {
		return nil, fmt.Errorf("copy to apply the log: %w", err)
	}
	err = guard(func() error { return db.View(func(tx *bolt.Tx) error { _, err := tx.WriteTo(f); return err }) })
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("copy to apply the log: %w", err)
	}
	cp, err := bolt.Open(f.Name(), 0o600, &bolt.Options{NoSync: true, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err == nil {
		err = guard(func() error { return cp.Update(func(tx *bolt.Tx) error { return replayLog(tx, pending) }) })
	}
	if err != nil {
		if cp != nil {
			closeQuietly(cp)
		}
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("apply the log to a copy: %w", err)
	}
	return cp, nil
}
