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
	quiet := slog.New(slog.DiscardHandler)
	rep := &Repaired{}
	err = guard(func() error {
		return src.View(func(tx *bolt.Tx) error {
			version, err := checkFormat(tx)
			if err != nil {
				return err
			}
			r, err := readState(tx, now.UnixNano(), version, quiet)
			if err != nil {
				return err
			}
			if len(r.damage) == 0 {
				return nil
			}
			// Entries without a session record are removed by every start; here they are
			// most likely the entries of a session whose key was damaged, so they are listed.
			rep.GivenUp = append(r.damage, r.strays...)
			skip := make(map[string]map[string]bool)
			for _, d := range rep.GivenUp {
				if d.unplaced {
					continue // copyRecords leaves it out by its checksum
				}
				if skip[d.Bucket] == nil {
					skip[d.Bucket] = make(map[string]bool)
				}
				skip[d.Bucket][string(d.Key)] = true
			}
			rep.Written, err = copyRecords(tx, version, tmp, skip)
			return err
		})
	})
	if err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("repair %s: %w", path, err)
	}
	if len(rep.GivenUp) == 0 {
		return rep, nil
	}
	if err := checkClean(tmp); err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("repair %s: the new file is not clean, the original is untouched: %w", path, err)
	}
	rep.Kept = path + ".damaged-" + now.UTC().Format("20060102T150405Z")
	if err := os.Link(path, rep.Kept); err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("repair %s: keep the original as %s: %w", path, rep.Kept, err)
	}
	if err := swapIn(tmp, path); err != nil {
		return nil, fmt.Errorf("repair %s (the original is kept as %s): %w", path, rep.Kept, err)
	}
	return rep, nil
}

// checkClean reads the file at path through a read-only handle as Open would, and fails if it
// cannot be read or has damaged records.
func checkClean(path string) error {
	db, err := openBolt(path, true, true)
	if err != nil {
		return err
	}
	defer closeQuietly(db)
	r, err := readFile(db, time.Now().UnixNano(), slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	return r.damageError(path)
}
