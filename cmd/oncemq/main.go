// Command oncemq is an MQTT 3.1.1/5.0 broker whose QoS 2 delivery is exactly-once and survives
// crashes. Run `oncemq help` for its subcommands; `oncemq` alone runs `oncemq serve`.
package main

import "os"

// version is the release name, set at build time with -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() { os.Exit(run(os.Args[1:])) }
