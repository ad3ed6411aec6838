package inflight

import (
	"bytes"
	"errors"
	"log/slog"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
	bolt "go.etcd.io/bbolt"
)

// logBuffer collects log output for tests that check what was logged, and is safe to write from
// the committer goroutine.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func testLogger(w *logBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// testPath returns a journal path in a directory that does not exist yet, so that every test also
// checks that Open creates it.
func testPath(t testing.TB) string {
	return filepath.Join(t.TempDir(), "data", "oncemq.db")
}

// openTest opens the journal at path (a new one if path is ""). At cleanup it closes the journal,
// reopens the file and checks every invariant of what it reads back, so that every test also checks
// that it left a consistent file (bbolt's MustCreateDB habit).
func openTest(t testing.TB, path string, opts *Options) (*Journal, *Recovered, string) {
	t.Helper()
	if path == "" {
		path = testPath(t)
	}
	if opts == nil {
		opts = &Options{}
	}
	if opts.Logger == nil {
		opts.Logger = testLogger(&logBuffer{})
	}
	j, rec, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := rec.Check(); err != nil {
		t.Errorf("state read by Open breaks invariants:\n%v", err)
	}
	t.Cleanup(func() {
		if err := j.Close(); err != nil && j.Err() == nil {
			t.Errorf("Close: %v", err)
		}
		j2, rec2, err := Open(path, &Options{Logger: opts.Logger})
		if err != nil {
			t.Errorf("reopen at cleanup: %v", err)
			return
		}
		if err := rec2.Check(); err != nil {
			t.Errorf("state after reopen breaks invariants:\n%v", err)
		}
		if err := j2.Close(); err != nil {
			t.Errorf("close after reopen: %v", err)
		}
	})
	return j, rec, path
}

// commit submits b and waits for its done.
func commit(t testing.TB, j *Journal, b *Batch) error {
	t.Helper()
	ch := make(chan error, 1)
	j.Submit(b, func(err error) { ch <- err })
	select {
	case err := <-ch:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("done not called within 30s")
		return nil
	}
}

func mustCommit(t testing.TB, j *Journal, b *Batch) {
	t.Helper()
	if err := commit(t, j, b); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

// newMessage returns a QoS 2 message with a sequence of j and every property a message can carry.
func newMessage(j *Journal, topic, payload string) *Message {
	return &Message{
		Seq:     j.NextSeq(),
		Topic:   topic,
		Payload: []byte(payload),
		QoS:     2,
		Properties: packets.Properties{
			PayloadFormat:         1,
			PayloadFormatFlag:     true,
			MessageExpiryInterval: 60,
			ContentType:           "text/plain",
			ResponseTopic:         "reply/" + topic,
			CorrelationData:       []byte{1, 2, 3},
			User:                  []packets.UserProperty{{Key: "k", Val: "v"}, {Key: "k", Val: "w"}},
		},
		Created:   1_700_000_000_000_000_000,
		ExpiresAt: 1_700_000_060_000_000_000,
	}
}

// sameMessage compares the exported fields of two messages.
func sameMessage(t testing.TB, what string, got, want *Message) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: missing", what)
		return
	}
	type plain struct {
		Seq        uint64
		Topic      string
		Payload    []byte
		QoS        byte
		Retain     bool
		Properties packets.Properties
		Created    int64
		ExpiresAt  int64
	}
	g := plain{got.Seq, got.Topic, got.Payload, got.QoS, got.Retain, got.Properties, got.Created, got.ExpiresAt}
	w := plain{want.Seq, want.Topic, want.Payload, want.QoS, want.Retain, want.Properties, want.Created, want.ExpiresAt}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, g, w)
	}
}

// session returns the recovered session of clientID, or nil.
func session(rec *Recovered, clientID string) *RecoveredSession {
	for i := range rec.Sessions {
		if rec.Sessions[i].Record.ClientID == clientID {
			return &rec.Sessions[i]
		}
	}
	return nil
}

// rawKeys lists the keys of a bucket of a closed journal file, straight from bbolt.
func rawKeys(t testing.TB, path string, bucket []byte) []string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatalf("bolt open: %v", err)
	}
	defer db.Close()
	var keys []string
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		if b == nil {
			return errors.New("no bucket " + string(bucket))
		}
		return b.ForEach(func(k, _ []byte) error {
			keys = append(keys, string(k))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// rawUpdate changes a closed journal file with bbolt directly, to simulate damage.
func rawUpdate(t testing.TB, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("bolt open: %v", err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// loadMessage reads the body of seq through LoadMessage.
func loadMessage(t testing.TB, j *Journal, seq uint64) *Message {
	t.Helper()
	m, err := j.LoadMessage(seq)
	if err != nil {
		t.Fatalf("load message %d: %v", seq, err)
	}
	return m
}
