package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
)

// command is one subcommand of oncemq. A subcommand lives in its own file and registers itself:
//
//	func init() { register(command{name: "bench", summary: "measure throughput", run: runBench}) }
//
// run gets the arguments after the subcommand's name and returns the process exit code:
// 0 success, 1 failure at run time, 2 bad usage. It must answer -h/--help with its usage and 0.
type command struct {
	name    string
	summary string // one line, shown by `oncemq help`
	run     func(args []string) int
}

// defaultCommand runs when the first argument is a flag or there are no arguments.
const defaultCommand = "serve"

var commands = map[string]command{}

// Where the commands write; tests replace them.
var (
	stdout io.Writer = os.Stdout
	stderr io.Writer = os.Stderr
)

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("oncemq: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

func init() {
	register(command{name: "help", summary: "list the commands, or show one's flags: oncemq help COMMAND", run: runHelp})
	register(command{name: "version", summary: "print the version", run: runVersion})
}

// run dispatches os.Args[1:] to a subcommand and returns the exit code.
func run(args []string) int {
	name := defaultCommand
	if len(args) > 0 {
		switch a := args[0]; {
		case a == "-h" || a == "-help" || a == "--help":
			return runHelp(args[1:])
		case a == "-version" || a == "--version":
			return runVersion(args[1:])
		case !strings.HasPrefix(a, "-"):
			name, args = a, args[1:]
		}
	}
	cmd, ok := commands[name]
	if !ok {
		return usageError("oncemq", fmt.Sprintf("unknown command %q", name), "oncemq help")
	}
	return cmd.run(args)
}

// usageError prints a one-line error and a hint to stderr and returns the bad-usage exit code 2.
func usageError(prefix, msg, helpCmd string) int {
	fmt.Fprintf(stderr, "%s: %s\nRun '%s' for usage.\n", prefix, msg, helpCmd)
	return 2
}

func runHelp(args []string) int {
	switch {
	case len(args) > 1:
		return usageError("oncemq help", fmt.Sprintf("unexpected argument %q", args[1]), "oncemq help")
	case len(args) == 1 && args[0] != "-h" && args[0] != "--help" && args[0] != "-help":
		cmd, ok := commands[args[0]]
		if !ok {
			return usageError("oncemq help", fmt.Sprintf("unknown command %q", args[0]), "oncemq help")
		}
		if cmd.name == "help" {
			break
		}
		return cmd.run([]string{"--help"})
	}
	names := make([]string, 0, len(commands))
	width := 0
	for name := range commands {
		names = append(names, name)
		width = max(width, len(name))
	}
	slices.Sort(names)
	fmt.Fprintf(stdout, "oncemq is an MQTT 3.1.1/5.0 broker with crash-safe exactly-once QoS 2 delivery.\n\n")
	fmt.Fprintf(stdout, "Usage: oncemq [COMMAND] [flags]     (COMMAND defaults to %s)\n\nCommands:\n", defaultCommand)
	for _, name := range names {
		fmt.Fprintf(stdout, "  %-*s  %s\n", width, name, commands[name].summary)
	}
	fmt.Fprintf(stdout, "\nRun 'oncemq help COMMAND' or 'oncemq COMMAND --help' for a command's flags.\n")
	return 0
}

func runVersion(args []string) int {
	if len(args) > 0 && args[0] != "-h" && args[0] != "--help" && args[0] != "-help" {
		return usageError("oncemq version", fmt.Sprintf("unexpected argument %q", args[0]), "oncemq help")
	}
	if len(args) > 0 {
		fmt.Fprintln(stdout, "Usage: oncemq version    (or oncemq --version)\n\nPrint the version.")
		return 0
	}
	fmt.Fprintf(stdout, "oncemq %s %s %s/%s\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}
