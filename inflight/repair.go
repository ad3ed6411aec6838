package inflight

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Repaired is what Repair did.
type Repaired struct {
	GivenUp []Damage       // every record left out: the damaged ones and those that depended on them
	Kept    string         // where the original file is now, "" when nothing was given up
	Written map[string]int // records written, by bucket
}

// Repair writes a new data file at path without its damaged records and without the records that
// depended on them (an entry whose message or session record is damaged, an entry whose message is
// missing), and keeps the original beside it as path.damaged-<UTC time>. It never deletes a byte
// of the original: the new file is written beside it, synced and renamed over path, and the
// original stays under its new name as a hard link made first. A file without damage is left as it
// is (GivenUp empty). It fails, changing nothing, when bbolt cannot read the file's pages at all
// (empty, truncated, not a bbolt file): there is no record to save then.
//
// Repair runs only when an operator asks for it (`oncemq repair`): what it gives up were
// acknowledged messages, and only a person can decide that losing them is better than not
// starting.
func Repair(path string, now time.Time) (*Repaired, error) {
	// A read-only handle: its shared lock keeps a broker off, and unlike a handle for writing it does
	// not walk every page in a goroutine of bbolt's, where a damaged page would panic unrecovered.
	src, err := openBolt(path, true, true)
	if err != nil {
		return nil, err
	}
	defer closeQuietly(src)
	tmp := path + ".repair"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("repair %s: remove the leftover %s: %w", path, tmp, err)
	}
	rep := &Repaired{}
	rep.GivenUp, rep.Written, err = copyWithoutDamage(src, tmp, now)
	if err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("repair %s: %w", path, err)
	}
	if len(rep.GivenUp) == 0 {
		return rep, nil
	}
	// The log holds acknowledged changes the damaged file does not have yet: they go into the copy,
	// and what they refer to that was given up makes them damage in turn, given up by a second pass.
	// The log is emptied once the copy is in place: the copy holds all of it.
	_, segs, pending, err := readLogFor(src, path)
	if err == nil {
		err = replayInto(tmp, pending)
	}
	if err == nil {
		err = dropDependents(tmp, now, rep)
	}
	if err == nil {
		err = checkClean(tmp)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("repair %s: the original is untouched: %w", path, err)
	}
	rep.Kept = path + ".damaged-" + now.UTC().Format("20060102T150405Z") // the log's copies get the same stamp
	if err := os.Link(path, rep.Kept); err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("repair %s: keep the original as %s: %w", path, rep.Kept, err)
	}
	stamp := now.UTC().Format("20060102T150405Z")
	for _, l := range segs {
		if l.used > 0 {
			if err := copyFile(l.path, l.path+".damaged-"+stamp); err != nil {
				_ = os.Remove(tmp)
				return nil, fmt.Errorf("repair %s: keep the log %s: %w", path, l.path, err)
			}
		}
	}
	if err := swapIn(tmp, path); err != nil {
		return nil, fmt.Errorf("repair %s (the original is kept as %s): %w", path, rep.Kept, err)
	}
	if err := emptyLog(segs); err != nil {
		return nil, fmt.Errorf("repair %s: the repaired file is in place, but emptying its log failed (do not start a broker on it before the log is gone): %w", path, err)
	}
	return rep, nil
}

// copyWithoutDamage copies the records of src into a new file at dst, leaving out the damaged ones
// and those that depend on them, which it returns. Nothing is written when there is no damage.
func copyWithoutDamage(src *bolt.DB, dst string, now time.Time) (givenUp []Damage, written map[string]int, err error) {
	quiet := slog.New(slog.DiscardHandler)
	err = guard(func() error {
		return src.View(func(tx *bolt.Tx) error {
			version, err := checkFormat(tx)
			if err != nil {
				return err
			}
			r, err := readState(tx, now.UnixNano(), version, true, quiet)
			if err != nil {
				return err
			}
			if len(r.damage) == 0 {
				return nil
			}
			// Entries without a session record are removed by every start; here they are
			// most likely the entries of a session whose key was damaged, so they are listed.
			givenUp = append(r.damage, r.strays...)
			skip := make(map[string]map[string]bool)
			for _, d := range givenUp {
				if d.unplaced {
					continue // copyRecords leaves it out by its checksum
				}
				if skip[d.Bucket] == nil {
					skip[d.Bucket] = make(map[string]bool)
				}
				skip[d.Bucket][string(d.Key)] = true
			}
			written, err = copyRecords(tx, version, dst, skip)
			return err
		})
	})
	return givenUp, written, err
}

// replayInto applies the log records after a damaged file's index to its repaired copy at path.
func replayInto(path string, pending []logRecord) error {
	if len(pending) == 0 {
		return nil
	}
	db, err := openBolt(path, false, false)
	if err != nil {
		return err
	}
	err = guard(func() error { return db.Update(func(tx *bolt.Tx) error { return replayLog(tx, pending) }) })
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("replay the log into %s: %w", path, err)
	}
	return nil
}

// dropDependents gives up, by a second copy, what the log's records made depend on a record the
// first pass gave up (an entry the log added whose message was damaged), and adds it to rep.
func dropDependents(path string, now time.Time, rep *Repaired) error {
	db, err := openBolt(path, true, true)
	if err != nil {
		return err
	}
	again := path + ".2"
	more, written, err := copyWithoutDamage(db, again, now)
	closeQuietly(db)
	if err != nil || len(more) == 0 {
		_ = os.Remove(again)
		return err
	}
	rep.GivenUp = append(rep.GivenUp, more...)
	rep.Written = written
	return os.Rename(again, path)
}

// copyFile copies the file at from to a new file at to, synced.
func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// checkClean reads the file at path through a read-only handle as Open would, and fails if it
// cannot be read or has damaged records.
func checkClean(path string) error {
	db, err := openBolt(path, true, true)
	if err != nil {
		return err
	}
	defer closeQuietly(db)
	r, err := readFile(db, time.Now().UnixNano(), true, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	return r.damageError(path)
}
