package inflight

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// v1Now is the clock of testdata/store/v1: the fixture was written at 2026-01-01T00:00:00Z.
const v1Now = int64(1_767_225_600) * 1e9

// copyV1 copies testdata/store/v1/oncemq.db, a format 1 file written by the code before format 2
// (testdata/README.md), into a new directory.
func copyV1(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "store", "v1", "oncemq.db"))
	if err != nil {
		t.Fatal(err)
	}
	return copyTo(t, b)
}

// A format 1 file is migrated on its first open: one log line with the counts, every record
// rewritten sealed under format 2, the same state recovered, and a leftover of a migration that
// crashed (oncemq.db.migrate) does not confuse it.
func TestMigrateV1(t *testing.T) {
	path := copyV1(t)
	if err := os.WriteFile(path+".migrate", []byte("a migration cut short"), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	j, rec, err := Open(path, &Options{Logger: testLogger(logs), Now: func() int64 { return v1Now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Check(); err != nil {
		t.Error(err)
	}
	sub := session(rec, "sub")
	if sub == nil || len(sub.Outbound) != 3 {
		t.Fatalf("session sub %+v", sub)
	}
	if m, err := j.LoadMessage(sub.Outbound[1].MsgSeq); err != nil || string(m.Payload) != "21.0" {
		t.Errorf("outbound message %+v, %v", m, err)
	}
	j.Close()
	want := `level=INFO msg="inflight: data file migrated" path=` + path + ` from_format=1 to_format=2 sessions=2 subscriptions=2 inbound=1 outbound=3 queued=3 messages=5 retained=1 dedup_ids=1`
	if n := strings.Count(logs.String(), "data file migrated"); n != 1 || !strings.Contains(logs.String(), want) {
		t.Errorf("log:\n%s\nwant once:\n%s", logs, want)
	}
	if _, err := os.Stat(path + ".migrate"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the leftover %s.migrate is still there: %v", path, err)
	}
	if session(rec, "old311") == nil || len(rec.Sessions) != 2 {
		t.Fatalf("sessions %+v", rec.Sessions)
	}
	if sub.Record.Owner == nil || *sub.Record.Owner != "alice" || sub.Record.Will == nil || string(sub.Record.Will.Message.Payload) != "gone" {
		t.Errorf("session sub %+v", sub.Record)
	}
	if len(sub.Subscriptions) != 1 || sub.Subscriptions[0].Identifier != 7 || len(sub.Inbound) != 1 ||
		len(sub.Outbound) != 3 || len(sub.Queue) != 2 || sub.Queue[0].SubIDs[0] != 7 {
		t.Errorf("session sub %+v", sub)
	}
	if len(rec.Retained) != 1 || string(rec.Retained[0].Payload) != "online" || len(rec.Dedup) != 1 {
		t.Errorf("retained %+v dedup %+v", rec.Retained, rec.Dedup)
	}
	// Every value is now sealed, meta/format included.
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx *bolt.Tx) error {
		if v, err := checkFormat(tx); err != nil || v != formatVersion {
			t.Errorf("format %d, %v", v, err)
		}
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				body, err := unseal(name, k, v)
				if err != nil || body[0] != formatVersion {
					t.Errorf("bucket %s key %q: %v, version %v", name, k, err, body)
				}
				return nil
			})
		})
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	// The second open finds format 2: nothing to migrate.
	logs2 := &logBuffer{}
	j, _, err = Open(path, &Options{Logger: testLogger(logs2), Now: func() int64 { return v1Now }})
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	if strings.Contains(logs2.String(), "migrated") {
		t.Errorf("migrated twice:\n%s", logs2)
	}
}

// A format 1 file with damage is not migrated: Open stops with the damage, and the file is left as
// it was.
func TestMigrateV1Damaged(t *testing.T) {
	path := copyV1(t)
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMsgs).Delete(seqKey(3))
	})
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Open(path, &Options{Logger: testLogger(&logBuffer{}), Now: func() int64 { return v1Now }})
	var de *DamageError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "refers to message 3, which is missing") || !strings.Contains(err.Error(), "from format 1 to 2") {
		t.Fatalf("Open = %v", err)
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, before) {
		t.Errorf("the refused file changed (%v)", err)
	}
	if _, err := os.Stat(path + ".migrate"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed migration left %s.migrate: %v", path, err)
	}
}

// A new store is created only where no file exists: an empty file is refused, and a crash while
// a new store is made leaves oncemq.db.new, never an empty oncemq.db.
func TestOpenEmptyFile(t *testing.T) {
	path := copyTo(t, nil)
	_, _, err := Open(path, nil)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "the file is empty (0 bytes)") {
		t.Errorf("Open of an empty file = %v", err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != 0 {
		t.Errorf("the empty file changed: %v", err)
	}
	fresh := testPath(t)
	if err := os.MkdirAll(filepath.Dir(fresh), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fresh+".new", []byte("a creation cut short"), 0o600); err != nil {
		t.Fatal(err)
	}
	openTest(t, fresh, nil)
	if _, err := os.Stat(fresh + ".new"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the leftover %s.new is still there: %v", fresh, err)
	}
}
