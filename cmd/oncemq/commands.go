package main

import (
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/oncemq/oncemq/cmd/oncemq/internal/cli"
)

// The built-in commands, which need the table of commands itself or the binary's version.
const (
	helpSummary    = "list the commands, or show one's flags: oncemq help COMMAND"
	versionSummary = "print the version"
)

// run dispatches os.Args[1:] to a subcommand and returns the exit code.
func run(args []string, env cli.Env) int {
	name := defaultCommand
	if len(args) > 0 {
		switch a := args[0]; {
		case cli.IsHelp(a):
			return runHelp(args[1:], env)
		case a == "-version" || a == "--version":
			return runVersion(args[1:], env)
		case !strings.HasPrefix(a, "-"):
			name, args = a, args[1:]
		}
	}
	switch name {
	case "help":
		return runHelp(args, env)
	case "version":
		return runVersion(args, env)
	}
	cmd, ok := lookup(name)
	if !ok {
		return cli.UsageError(env.Stderr, "oncemq", fmt.Sprintf("unknown command %q", name), "oncemq help")
	}
	return cmd.run(args, env)
}

func lookup(name string) (command, bool) {
	i := slices.IndexFunc(commands, func(c command) bool { return c.name == name })
	if i < 0 {
		return command{}, false
	}
	return commands[i], true
}

// runHelp lists the commands, or shows one command's usage.
func runHelp(args []string, env cli.Env) int {
	switch {
	case len(args) > 1:
		return cli.UsageError(env.Stderr, "oncemq help", fmt.Sprintf("unexpected argument %q", args[1]), "oncemq help")
	case len(args) == 1 && !cli.IsHelp(args[0]) && args[0] != "help":
		if args[0] == "version" {
			return runVersion([]string{"--help"}, env)
		}
		cmd, ok := lookup(args[0])
		if !ok {
			return cli.UsageError(env.Stderr, "oncemq help", fmt.Sprintf("unknown command %q", args[0]), "oncemq help")
		}
		return cmd.run([]string{"--help"}, env)
	}
	all := append(slices.Clone(commands),
		command{name: "help", summary: helpSummary}, command{name: "version", summary: versionSummary})
	slices.SortFunc(all, func(a, b command) int { return strings.Compare(a.name, b.name) })
	width := 0
	for _, c := range all {
		width = max(width, len(c.name))
	}
	w := env.Stdout
	fmt.Fprintf(w, "oncemq is an MQTT 3.1.1/5.0 broker with crash-safe exactly-once QoS 2 delivery.\n\n")
	fmt.Fprintf(w, "Usage: oncemq [COMMAND] [flags]     (COMMAND defaults to %s)\n\nCommands:\n", defaultCommand)
	for _, c := range all {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'oncemq help COMMAND' or 'oncemq COMMAND --help' for a command's flags.\n")
	return cli.ExitOK
}

// runVersion prints the version, the Go release and the platform.
func runVersion(args []string, env cli.Env) int {
	if len(args) > 0 && !cli.IsHelp(args[0]) {
		return cli.UsageError(env.Stderr, "oncemq version", fmt.Sprintf("unexpected argument %q", args[0]), "oncemq help")
	}
	if len(args) > 0 {
		fmt.Fprintln(env.Stdout, "Usage: oncemq version    (or oncemq --version)\n\nPrint the version.")
		return cli.ExitOK
	}
	fmt.Fprintf(env.Stdout, "oncemq %s %s %s/%s\n", env.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return cli.ExitOK
}
