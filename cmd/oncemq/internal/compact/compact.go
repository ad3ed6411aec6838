// Package compact is `oncemq compact`: a stopped broker's data file rewritten without its free
// pages.
package compact

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"

	"github.com/oncemq/oncemq/cmd/oncemq/internal/cli"
	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/mqtt"
)

const usage = `Usage: oncemq compact --data DIR

Rewrite the data file of a stopped broker without its free pages: the file bbolt grew for a burst
(a deep queue, since drained) never shrinks by itself. The copy is written beside the file,
synced, and renamed over it; a crash leaves the old file or the new one, whole. The broker must be
stopped: compact refuses a file a broker holds.

Flags:
  --data DIR    data directory, holding oncemq.db (default ./data)
`

// Main runs compact. Exit codes: 0 compacted, 1 failed (or the file is in use), 2 bad flags.
func Main(args []string, env cli.Env) int {
	fs := flag.NewFlagSet("compact", flag.ContinueOnError)
	dir := fs.String("data", "./data", "")
	if code, ok := cli.Parse(fs, args, env, usage); !ok {
		return code
	}
	path := filepath.Join(*dir, mqtt.DataFile)
	before, after, err := inflight.Compact(path)
	if errors.Is(err, inflight.ErrInUse) {
		fmt.Fprintf(env.Stderr, "oncemq compact: %s is held by a running broker: stop it first\n", path)
		return cli.ExitFailure
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "oncemq compact: %v\n", err)
		return cli.ExitFailure
	}
	fmt.Fprintf(env.Stdout, "compacted %s: %d bytes before, %d after\n", path, before, after)
	return cli.ExitOK
}
