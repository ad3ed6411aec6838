// Package inspect is `oncemq inspect`: what a stopped broker's data file holds, session by session,
// read without changing the file.
package inspect

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/oncemq/oncemq/cmd/oncemq/internal/cli"
	"github.com/oncemq/oncemq/inflight"
	"github.com/oncemq/oncemq/mqtt"
)

const usage = `Usage: oncemq inspect --data DIR [--client ID] [--json]

Print what the data file of a stopped broker holds: each session's expiry, subscriptions, inbound
ids awaiting PUBREL, outbound ids in flight with their state and queued messages; the retained
messages, the file size and its free pages. The file is opened read-only and never changed.
A running broker holds the file: ask it instead (--http-listen, /admin/sessions).

Flags:
  --data DIR    data directory, holding oncemq.db (default ./data)
  --client ID   only this client's session
  --json        one JSON document instead of text
`

// Main runs inspect. Exit codes: 0 printed, 1 the file cannot be read (or is in use), 2 bad flags.
func Main(args []string, env cli.Env) int {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	dir := fs.String("data", "./data", "")
	client := fs.String("client", "", "")
	asJSON := fs.Bool("json", false, "")
	if code, ok := cli.Parse(fs, args, env, usage); !ok {
		return code
	}
	path := filepath.Join(*dir, mqtt.DataFile)
	in, err := inflight.Inspect(path, time.Now().UnixNano())
	if errors.Is(err, inflight.ErrInUse) {
		fmt.Fprintf(env.Stderr, "oncemq inspect: %s is held by a running broker; inspect reads only a stopped broker's file.\n"+
			"Ask the running broker instead: start it with --http-listen ADDR and read http://ADDR/admin/sessions.\n", path)
		return cli.ExitFailure
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "oncemq inspect: %v\n", err)
		return cli.ExitFailure
	}
	rep := newReport(in, *client)
	if *client != "" && len(rep.Sessions) == 0 {
		fmt.Fprintf(env.Stderr, "oncemq inspect: no session %q in %s\n", *client, path)
		return cli.ExitFailure
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(env.Stderr, "oncemq inspect: %v\n", err)
			return cli.ExitFailure
		}
		return cli.ExitOK
	}
	rep.writeText(env.Stdout)
	return cli.ExitOK
}
