package inflight_test

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncemq/oncemq/inflight"
)

// Open refuses each damaged data file of testdata/store (see testdata/README.md for how each was
// made) with an error that names the file and says it is corrupt, and leaves the file as it found
// it: starting empty would drop every message already acknowledged, and rewriting the file would
// destroy what an operator needs to recover it.
//
// The zero-length oncemq.db of testdata/store/empty is refused too: Open creates a new store beside
// its path and renames it into place, so no crash of oncemq leaves an empty file, and an empty file
// is what a lost file system leaves.
func TestOpenRefusesDamagedFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		says string // what the error must say, besides the path
	}{
		{"empty", "the file is empty (0 bytes)"},
		{"garbage", "not a readable bbolt file"},
		{"truncated", "corrupt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("..", "testdata", "store", tc.name, "oncemq.db"))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "oncemq.db")
			if err := os.WriteFile(path, want, 0o600); err != nil {
				t.Fatal(err)
			}
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			j, _, err := inflight.Open(path, &inflight.Options{Logger: quiet})
			if err == nil {
				_ = j.Close()
				t.Fatalf("Open started on the damaged file %s", tc.name)
			}
			if !errors.Is(err, inflight.ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %q: want inflight.ErrCorrupt, the path %s and %q", err, path, tc.says)
			}
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("the refused file changed (%d bytes, was %d): %v", len(got), len(want), err)
			}
		})
	}
}
