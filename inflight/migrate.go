package inflight

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// copyTxOps bounds the changes of one write transaction of a copy, so that a large file is copied
// in pieces instead of in one transaction held in memory.
const copyTxOps = 10_000

// migrate rewrites a format 1 file at path in the current format, and does nothing to a file of
// the current format. Every record is read with the decoders of its version, turned back into the
// Batch change that wrote it (recordOp), and applied to a new file by the committer's own code
// (buckets.apply), so that the new file holds what the current encoders write. The new file is
// written beside path, synced, and renamed over it, and the directory synced: a crash leaves the
// old file (and a leftover path.migrate, removed by the next attempt) or the new one, whole.
//
// A format 1 file with damaged records is not migrated: Open stops with the DamageError, and
// `oncemq repair` writes a current file without them.
func migrate(path string, now int64, log *slog.Logger) error {
	version, err := fileVersion(path)
	if err != nil || version == formatVersion {
		return err
	}
	// A read-only handle: its shared lock keeps a broker off, and unlike a handle for writing it does
	// not walk every page in a goroutine of bbolt's, where a damaged page would panic unrecovered.
	src, err := openBolt(path, true, true)
	if err != nil {
		return err
	}
	defer closeQuietly(src)
	tmp := path + ".migrate"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("migrate %s: remove the leftover %s: %w", path, tmp, err)
	}
	var counts map[string]int
	err = guard(func() error {
		return src.View(func(tx *bolt.Tx) error {
			r, err := readState(tx, now, version, false, log.With(slog.String("path", path)))
			if err != nil {
				return err
			}
			if err := r.damageError(path); err != nil {
				return err
			}
			counts, err = copyRecords(tx, version, tmp, nil)
			return err
		})
	})
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("migrate %s from format %d to %d: %w", path, version, formatVersion, err)
	}
	if err := swapIn(tmp, path); err != nil {
		return fmt.Errorf("migrate %s: %w", path, err)
	}
	log.Info("inflight: data file migrated", slog.String("path", path),
		slog.Int("from_format", int(version)), slog.Int("to_format", formatVersion),
		slog.Int("sessions", counts["sessions"]), slog.Int("subscriptions", counts["subs"]),
		slog.Int("inbound", counts["in"]), slog.Int("outbound", counts["out"]), slog.Int("queued", counts["queue"]),
		slog.Int("messages", counts["msgs"]), slog.Int("retained", counts["retained"]), slog.Int("dedup_ids", counts["dedup"]))
	return nil
}

// fileVersion reads the format version of the file at path through a read-only handle.
func fileVersion(path string) (version byte, err error) {
	db, err := openBolt(path, true, true)
	if err != nil {
		return 0, err
	}
	defer closeQuietly(db)
	err = guard(func() error {
		return db.View(func(tx *bolt.Tx) error {
			version, err = checkFormat(tx)
			return err
		})
	})
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", path, err)
	}
	return version, nil
}

// copyRecords writes every record of tx, a file of format version, into a new file at dst through
// the write path of the committer, and syncs it. With a skip set (Repair) it leaves out the keys in
// skip (by bucket) and every record that fails its checksum; without one (migrate) such a record
// fails the copy. Records that fail their checksum or are out of key order (Damage.unplaced) are
// not in skip: a damaged key can equal an intact record's, which must not go with it. It
// returns how many records of each bucket it wrote. The records must have passed readState:
// recordOp does not check again what readState checks (a key that matches its value).
func copyRecords(tx *bolt.Tx, version byte, dst string, skip map[string]map[string]bool) (map[string]int, error) {
	db, err := createBolt(dst)
	if err != nil {
		return nil, err
	}
	counts := make(map[string]int)
	var batch Batch
	flush := func() error {
		if len(batch.ops) == 0 {
			return nil
		}
		err := db.Update(func(wtx *bolt.Tx) error {
			bk, err := txBuckets(wtx)
			if err != nil {
				return err
			}
			for i := range batch.ops {
				if err := bk.apply(&batch.ops[i]); err != nil {
					return err
				}
			}
			return nil
		})
		batch.ops = batch.ops[:0]
		return err
	}
	r := &recovery{version: version}
	for _, name := range copyBuckets {
		b := tx.Bucket(name)
		if b == nil && version != formatV1 {
			b, _ = findBucket(tx, name) // written back under its own name
		}
		if b == nil {
			continue
		}
		var prev []byte
		err := b.ForEach(func(k, v []byte) error {
			v, err := r.value(name, k, v)
			if err == nil && prev != nil && bytes.Compare(prev, k) >= 0 {
				err = errors.New("key out of order")
			}
			if err != nil && skip != nil {
				return nil // given up by the same rules as readState's
			}
			if err != nil {
				return fmt.Errorf("bucket %s key %q: %w", name, abbreviate(k), err)
			}
			prev = k
			if skip[string(name)][string(k)] {
				return nil
			}
			o, err := recordOp(string(name), k, v)
			if err == nil {
				err = o.validate()
			}
			if err != nil {
				return fmt.Errorf("bucket %s key %q: %w", name, abbreviate(k), err)
			}
			batch.ops = append(batch.ops, o)
			counts[string(name)]++
			if len(batch.ops) >= copyTxOps {
				return flush()
			}
			return nil
		})
		if err == nil {
			err = flush()
		}
		if err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("copy into %s: %w", dst, err)
		}
	}
	if err := closeAndSync(db, dst); err != nil {
		return nil, err
	}
	return counts, nil
}

// copyBuckets are the buckets copyRecords copies: those readState reads, with the bodies (msgs) in
// place of their index (msgidx), which PutMessage writes with each body.
var copyBuckets = func() [][]byte {
	c := slices.Clone(recoveryBuckets)
	c[slices.IndexFunc(c, func(b []byte) bool { return bytes.Equal(b, bucketMsgIdx) })] = bucketMsgs
	return c
}()

// recordOp turns a stored record, its checksum removed, back into the Batch change that wrote it.
func recordOp(bucket string, k, v []byte) (op, error) {
	switch bucket {
	case "sessions":
		var s SessionRecord
		if err := decodeJSON(v, &s); err != nil {
			return op{}, err
		}
		return op{kind: opPutSession, clientID: s.ClientID, session: &s}, nil
	case "msgs":
		if len(k) != 8 {
			return op{}, errors.New("message key is not a sequence")
		}
		m, err := decodeMessage(v)
		if err != nil {
			return op{}, err
		}
		m.Seq = binary.BigEndian.Uint64(k)
		return op{kind: opPutMessage, msg: m, seq: m.Seq}, nil
	case "retained":
		m, err := decodeMessage(v)
		if err != nil {
			return op{}, err
		}
		return op{kind: opPutRetained, msg: m, topic: m.Topic}, nil
	case "dedup":
		d, err := decodeDedup(k, v)
		if err != nil {
			return op{}, err
		}
		return op{kind: opPutDedup, dedup: &d}, nil
	case "shared":
		r, err := decodeShared(k, v)
		if err != nil {
			return op{}, err
		}
		return op{kind: opPutShared, shared: &r}, nil
	}
	clientID, suffix, ok := splitKey(k)
	if !ok {
		return op{}, errors.New("key has no client id")
	}
	switch bucket {
	case "subs":
		var sub SubscriptionRecord
		if err := decodeJSON(v, &sub); err != nil {
			return op{}, err
		}
		return op{kind: opPutSubscription, clientID: clientID, sub: &sub}, nil
	case "in":
		id, err := packetIDSuffix(suffix)
		if err != nil {
			return op{}, err
		}
		reason, err := decodeInbound(v)
		if err != nil {
			return op{}, err
		}
		return op{kind: opPutInbound, clientID: clientID, packetID: id, reason: reason}, nil
	case "out":
		id, err := packetIDSuffix(suffix)
		if err != nil {
			return op{}, err
		}
		e, err := decodeOutbound(v, id)
		if err != nil {
			return op{}, err
		}
		return op{kind: opPutOutbound, clientID: clientID, out: &e}, nil
	case "queue":
		q, err := decodeQueued(v)
		if err != nil {
			return op{}, err
		}
		return op{kind: opPutQueued, clientID: clientID, queued: &q}, nil
	}
	return op{}, fmt.Errorf("bucket %s unknown", bucket)
}
