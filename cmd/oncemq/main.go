// Command oncemq is an MQTT 3.1.1/5.0 broker whose QoS 2 delivery is exactly-once and survives
// crashes. Run `oncemq help` for its subcommands; `oncemq` alone runs `oncemq serve`.
//
// This package only dispatches: each subcommand is a package under internal/ with a
// Main(args []string, env cli.Env) int, named in the table below.
package main

import (
	"os"

	"github.com/oncemq/oncemq/cmd/oncemq/internal/backup"
	"github.com/oncemq/oncemq/cmd/oncemq/internal/cli"
	"github.com/oncemq/oncemq/cmd/oncemq/internal/compact"
	"github.com/oncemq/oncemq/cmd/oncemq/internal/health"
	"github.com/oncemq/oncemq/cmd/oncemq/internal/inspect"
	"github.com/oncemq/oncemq/cmd/oncemq/internal/passwd"
	"github.com/oncemq/oncemq/cmd/oncemq/internal/repair"
	"github.com/oncemq/oncemq/cmd/oncemq/internal/serve"
	"github.com/oncemq/oncemq/cmd/oncemq/internal/torture"
)

// version is the release name, set at build time with -ldflags "-X main.version=v1.2.3".
var version = "dev"

// command is one subcommand of oncemq. run gets the arguments after the subcommand's name and
// returns the process exit code (cli.ExitOK, cli.ExitFailure, cli.ExitUsage); it must answer
// -h/--help with its usage and 0.
type command struct {
	name    string
	summary string // one line, shown by `oncemq help`
	run     func(args []string, env cli.Env) int
}

// commands are the subcommands besides help and version. Adding one is adding its line.
var commands = []command{
	{"serve", "run the broker (the default command)", serve.Main},
	{"passwd", "add, change or delete a user of a password file (mosquitto's format)", passwd.Main},
	{"inspect", "print the sessions, ids and queues a stopped broker's data file holds (read-only)", inspect.Main},
	{"compact", "rewrite a stopped broker's data file without its free pages", compact.Main},
	{"repair", "rewrite a stopped broker's damaged data file without its damaged records, keeping the original", repair.Main},
	{"torture", "kill -9 a child broker under QoS 2 load and check exactly-once delivery", torture.Main},
	{"health", "exit 0 if a running broker is ready (its /readyz), 1 if not: for container health checks", health.Main},
	{"backup", "save a consistent copy of a running broker's store (its /admin/backup) to a file", backup.Main},
}

// defaultCommand runs when the first argument is a flag or there are no arguments.
const defaultCommand = "serve"

func main() {
	os.Exit(run(os.Args[1:], cli.Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Version: version}))
}
