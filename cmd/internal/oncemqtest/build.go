// Package oncemqtest runs the real oncemq binary in tests: Build compiles it once per test binary
// (and per set of build tags), StartBroker runs `oncemq serve` as a child process on a free
// loopback port. It imports package testing, so only tests may import it.
package oncemqtest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/oncemq/oncemq/cmd/internal/childproc"
)

// oncemqPackage is built by Build; a package path works from any directory of the module.
const oncemqPackage = "github.com/oncemq/oncemq/cmd/oncemq"

// builds holds the binaries built by this test binary, one per set of tags.
var builds struct {
	mu   sync.Mutex // guards the following
	dir  string     // removed by RemoveBuilds
	byID map[string]*build
}

type build struct {
	once sync.Once
	path string
	err  error
}

// Build builds cmd/oncemq with the given build tags (`go build -tags failpoint` for a binary
// with crash points) once per test binary, and returns the binary's path. Call RemoveBuilds from
// TestMain.
func Build(t testing.TB, tags ...string) string {
	t.Helper()
	tags = slices.Sorted(slices.Values(tags))
	id := strings.Join(tags, ",")
	builds.mu.Lock()
	if builds.byID == nil {
		builds.byID = map[string]*build{}
	}
	b := builds.byID[id]
	if b == nil {
		b = &build{}
		builds.byID[id] = b
	}
	builds.mu.Unlock()
	b.once.Do(func() { b.path, b.err = goBuild(id) })
	if b.err != nil {
		t.Fatalf("build the oncemq binary: %v", b.err)
	}
	return b.path
}

// goBuild runs go build into the builds' directory.
func goBuild(tags string) (string, error) {
	builds.mu.Lock()
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "oncemq-bin-")
		if err != nil {
			builds.mu.Unlock()
			return "", err
		}
		builds.dir = dir
	}
	name := "oncemq"
	if tags != "" {
		name += "-" + strings.ReplaceAll(tags, ",", "-")
	}
	path := filepath.Join(builds.dir, name)
	builds.mu.Unlock()
	var tagList []string
	if tags != "" {
		tagList = strings.Split(tags, ",")
	}
	if err := childproc.GoBuild(context.Background(), "", path, oncemqPackage, tagList...); err != nil {
		return "", err
	}
	return path, nil
}

// RemoveBuilds removes the binaries Build made. Call it from TestMain after m.Run.
func RemoveBuilds() {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
	builds.dir, builds.byID = "", nil
}
