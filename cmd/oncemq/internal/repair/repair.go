// Package repair is `oncemq repair`: a stopped broker's damaged data file rewritten without its
// damaged records, the original kept.
package repair

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/oncemq/oncemq/cmd/oncemq/internal/cli"
	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/mqtt"
)

const usage = `Usage: oncemq repair --data DIR

Rewrite the data file of a stopped broker without its damaged records: those that fail their
checksum or cannot be read, and those that depend on them (a queued or in-flight entry whose
message is damaged, the entries of a session whose record is damaged). Every record given up is
printed: bucket, key, client id, packet id, message. The original file is kept beside the new one
as oncemq.db.damaged-<time>; nothing is deleted. A file without damage is left as it is.

Repair gives up acknowledged messages: a broker never runs it on its own. It cannot repair a file
bbolt cannot read at all (empty, truncated, not a data file); restore a backup then.

Flags:
  --data DIR    data directory, holding oncemq.db (default ./data)
`

// Main runs repair. Exit codes: 0 repaired (or nothing to repair), 1 could not repair (or the file
// is in use), 2 bad flags.
func Main(args []string, env cli.Env) int {
	fs := flag.NewFlagSet("repair", flag.ContinueOnError)
	dir := fs.String("data", "./data", "")
	if code, ok := cli.Parse(fs, args, env, usage); !ok {
		return code
	}
	path := filepath.Join(*dir, mqtt.DataFile)
	rep, err := inflight.Repair(path, time.Now())
	if errors.Is(err, inflight.ErrInUse) {
		fmt.Fprintf(env.Stderr, "oncemq repair: %s is held by a running broker: stop it first\n", path)
		return cli.ExitFailure
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "oncemq repair: could not repair: %v\n", err)
		return cli.ExitFailure
	}
	if len(rep.GivenUp) == 0 {
		fmt.Fprintf(env.Stdout, "%s has no damaged record: nothing to repair, the file is unchanged\n", path)
		return cli.ExitOK
	}
	fmt.Fprintf(env.Stdout, "repaired %s: %d records given up:\n", path, len(rep.GivenUp))
	for _, d := range rep.GivenUp {
		kind := "damaged"
		if d.Dependent {
			kind = "depends on damage"
		}
		fmt.Fprintf(env.Stdout, "  %s: %s\n", kind, d)
	}
	w := rep.Written
	fmt.Fprintf(env.Stdout, "kept: %d sessions, %d subscriptions, %d inbound, %d outbound, %d queued, %d messages, %d retained, %d dedup ids\n",
		w["sessions"], w["subs"], w["in"], w["out"], w["queue"], w["msgs"], w["retained"], w["dedup"])
	fmt.Fprintf(env.Stdout, "the original file is kept as %s\n", rep.Kept)
	return cli.ExitOK
}
