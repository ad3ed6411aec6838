// Command oncemq-bench measures an MQTT broker: publish and delivery rates, publish-to-delivery
// latency, lost and duplicated messages, and memory per idle connection. `oncemq-bench compare`
// runs the same workloads against oncemq and its peers (mosquitto, mochi-mqtt) and prints a table.
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
	"syscall"
)

var stdout, stderr io.Writer = os.Stdout, os.Stderr

func main() { os.Exit(run(os.Args[1:])) }

const usage = `oncemq-bench measures an MQTT 5 broker.

Usage:
  oncemq-bench [run] [flags]     run one workload against --addr (the default command)
  oncemq-bench conns [flags]     hold N idle persistent connections, report memory per connection
  oncemq-bench compare [flags]   run the workloads against oncemq, mosquitto and mochi-mqtt
  oncemq-bench help              this text

Run "oncemq-bench COMMAND --help" for the flags of a command.

Exit status: 0 on success; 1 if a QoS 2 run lost or duplicated a message, a publish failed, or
the run could not be done; 2 for bad flags.
`

// run dispatches to a subcommand and returns the exit status.
func run(args []string) int {
	cmd := "run"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var code int
	var err error
	switch cmd {
	case "run":
		code, err = cmdRun(ctx, args)
	case "conns":
		code, err = cmdConns(ctx, args)
	case "compare":
		code, err = cmdCompare(ctx, args)
	case "mochi-peer": // hidden: the mochi-mqtt broker that compare starts as a child process
		code, err = cmdMochiPeer(ctx, args)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "oncemq-bench: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "oncemq-bench %s: %v\n", cmd, err)
	}
	return code
}
