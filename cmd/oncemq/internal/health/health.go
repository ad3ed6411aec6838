// Package health is `oncemq health`: it asks a running broker's /readyz and exits 0 when it is
// ready, 1 otherwise, with the reason. The container image has no shell and no curl, so its
// HEALTHCHECK runs this.
package health

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/oncemq/oncemq/cmd/oncemq/internal/admin"
	"github.com/oncemq/oncemq/cmd/oncemq/internal/cli"
)

const usage = `Usage: oncemq health [--http ADDR] [--timeout DURATION]

Ask the broker's admin listener whether it is ready (GET /readyz): exit 0 when it is, 1 when it
is not or cannot be reached (the reason is printed), 2 for bad flags.

  --http ADDR          the admin listener; default $ONCEMQ_HTTP_LISTEN, else ` + admin.DefaultAddr + `
  --timeout DURATION   give up after this long; default 3s
`

// Main runs the health check.
func Main(args []string, env cli.Env) int {
	fs := flag.NewFlagSet("health", flag.ContinueOnError)
	addr := fs.String("http", "", "")
	timeout := fs.Duration("timeout", 3*time.Second, "")
	if code, ok := cli.Parse(fs, args, env, usage); !ok {
		return code
	}
	if *addr == "" {
		*addr = strings.TrimSpace(env.Getenv("ONCEMQ_HTTP_LISTEN"))
	}
	if *addr == "" {
		*addr = admin.DefaultAddr
	}
	answer, err := probe(admin.BaseURL(*addr)+"/readyz", *timeout)
	if err != nil {
		fmt.Fprintf(env.Stderr, "oncemq health: not ready: %v\n", err)
		return cli.ExitFailure
	}
	fmt.Fprintln(env.Stdout, answer)
	return cli.ExitOK
}

// probe GETs url and returns its body when it answers 200; an error saying why otherwise.
func probe(url string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	text := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s answered %s: %s", url, resp.Status, text)
	}
	return text, nil
}
