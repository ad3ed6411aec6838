// Package cli holds what every oncemq subcommand shares: what it gets from the process (Env), its
// exit codes, and the way it reports bad usage. Each subcommand is a package with a
// Main(args []string, env cli.Env) int that the binary's table of commands names.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// Env is what a subcommand gets from the process besides its arguments. The binary passes
// os.Stdout, os.Stderr and os.Getenv; tests pass buffers and a map.
type Env struct {
	Stdout  io.Writer
	Stderr  io.Writer
	Getenv  func(key string) string
	Version string // the release name of the binary
}

// Exit codes of every subcommand.
const (
	ExitOK      = 0 // success
	ExitFailure = 1 // failure at run time
	ExitUsage   = 2 // bad flags, arguments or environment variables
)

// UsageError prints a one-line error and a hint to w and returns ExitUsage:
//
//	oncemq serve: unknown flag --bogus
//	Run 'oncemq serve --help' for usage.
func UsageError(w io.Writer, prefix, msg, helpCmd string) int {
	fmt.Fprintf(w, "%s: %s\nRun '%s' for usage.\n", prefix, msg, helpCmd)
	return ExitUsage
}

// IsHelp reports whether arg asks for help: -h, -help or --help.
func IsHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// Parse parses a subcommand's flags, which take no positional argument. It answers -h/--help with
// usage on Stdout and a bad flag or a stray argument with a usage error on Stderr; ok is false
// then, and code is the exit code to return.
func Parse(fs *flag.FlagSet, args []string, env Env, usage string) (code int, ok bool) {
	name := "oncemq " + fs.Name()
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(env.Stdout, usage)
			return ExitOK, false
		}
		return UsageError(env.Stderr, name, err.Error(), name+" --help"), false
	}
	if fs.NArg() > 0 {
		return UsageError(env.Stderr, name, fmt.Sprintf("unexpected argument %q", fs.Arg(0)), name+" --help"), false
	}
	return ExitOK, true
}
