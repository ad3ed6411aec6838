// Command oncemq-bench measures an MQTT broker: publish and delivery rates, publish-to-delivery
// latency, lost and duplicated messages, and memory per idle connection. `oncemq-bench compare`
// runs the same workloads against oncemq and its peers (mosquitto, mochi-mqtt) and prints a table.
// Run `oncemq-bench help` for its subcommands; `oncemq-bench` alone runs `oncemq-bench run`.
//
// It is a separate binary from oncemq because it links mochi-mqtt's server as a peer.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], console{out: os.Stdout, err: os.Stderr})
	stop()
	os.Exit(code)
}

// console is where a command writes: results to out; progress, warnings and errors to err.
type console struct {
	out, err io.Writer
}

// command is one subcommand of oncemq-bench. run gets the arguments after the command's name and
// returns the exit status, with the error to print if the command did not print it itself:
// status 2 means bad usage (the caller adds a hint to --help), flag.ErrHelp means the usage was
// printed on request.
type command struct {
	name    string
	summary string // one line in `oncemq-bench help`; empty: not listed
	run     func(ctx context.Context, con console, args []string) (int, error)
}

// defaultCommand runs when the first argument is a flag or there are no arguments.
const defaultCommand = "run"

// commands lists the subcommands in the order `oncemq-bench help` shows them.
func commands() []command {
	return []command{
		{name: "run", summary: "run one workload against a running broker (the default command)", run: cmdRun},
		{name: "conns", summary: "hold idle persistent connections to a running broker; report its memory per connection", run: cmdConns},
		{name: "compare", summary: "start oncemq, mosquitto and mochi-mqtt in turn and run every workload on each (about 17 min)", run: cmdCompare},
		{name: "help", summary: "list the commands, or show one's flags: oncemq-bench help COMMAND", run: cmdHelp},
		// The mochi-mqtt broker that compare starts as a child process; not for people.
		{name: "mochi-peer", run: cmdMochiPeer},
	}
}

func findCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// run dispatches args to a subcommand and returns the exit status: 0 success, 1 failure, 2 bad
// usage.
func run(ctx context.Context, args []string, con console) int {
	name := defaultCommand
	if len(args) > 0 {
		switch a := args[0]; {
		case a == "-h" || a == "-help" || a == "--help":
			name, args = "help", args[1:]
		case !strings.HasPrefix(a, "-"):
			name, args = a, args[1:]
		}
	}
	cmd, ok := findCommand(name)
	if !ok {
		return usageError(con.err, "oncemq-bench", fmt.Sprintf("unknown command %q", name), "oncemq-bench help")
	}
	code, err := cmd.run(ctx, con, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil && code == 2:
		return usageError(con.err, "oncemq-bench "+name, err.Error(), "oncemq-bench "+name+" --help")
	case err != nil:
		fmt.Fprintf(con.err, "oncemq-bench %s: %v\n", name, err)
	}
	return code
}

// usageError prints a one-line error and a hint to stderr and returns the bad-usage exit status 2.
func usageError(w io.Writer, prefix, msg, helpCmd string) int {
	fmt.Fprintf(w, "%s: %s\nRun '%s' for usage.\n", prefix, msg, helpCmd)
	return 2
}

// cmdHelp is `oncemq-bench help [COMMAND]`.
func cmdHelp(ctx context.Context, con console, args []string) (int, error) {
	switch {
	case len(args) > 1:
		return 2, fmt.Errorf("unexpected argument %q", args[1])
	case len(args) == 1 && args[0] != "-h" && args[0] != "-help" && args[0] != "--help" && args[0] != "help":
		cmd, ok := findCommand(args[0])
		if !ok {
			return 2, fmt.Errorf("unknown command %q", args[0])
		}
		return cmd.run(ctx, con, []string{"--help"})
	}
	writeHelp(con.out)
	return 0, nil
}

// writeHelp lists the commands with their summaries.
func writeHelp(w io.Writer) {
	fmt.Fprint(w, "oncemq-bench measures an MQTT 5 broker: publish and delivery rates, publish-to-delivery latency,\n"+
		"lost and duplicated messages, and memory per idle connection.\n\n")
	fmt.Fprintf(w, "Usage: oncemq-bench [COMMAND] [flags]     (COMMAND defaults to %s)\n\nCommands:\n", defaultCommand)
	width := 0
	for _, c := range commands() {
		width = max(width, len(c.name))
	}
	for _, c := range commands() {
		if c.summary != "" {
			fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
		}
	}
	fmt.Fprint(w, "\nEvery command writes its results into the folder given by --out DIR; without --out, into a new\n"+
		"folder under the system's temp folder. The folder is printed at the end.\n\n"+
		"Exit status: 0 on success; 1 if a QoS 2 run lost or duplicated a message, a publish failed, or\n"+
		"the run could not be done; 2 for bad flags.\n\n"+
		"Run 'oncemq-bench help COMMAND' or 'oncemq-bench COMMAND --help' for a command's flags.\n")
}
