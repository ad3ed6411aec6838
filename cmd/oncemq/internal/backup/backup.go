// Package backup is `oncemq backup`: it saves a running broker's store, as GET /admin/backup streams
// it, to a file. Restoring is starting a broker on that file (as oncemq.db in its --data folder).
package backup

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/oncemq/oncemq/cmd/oncemq/internal/admin"
	"github.com/oncemq/oncemq/cmd/oncemq/internal/cli"
)

const usage = `Usage: oncemq backup --out FILE [--http ADDR] [--token-file FILE]

Save a consistent copy of a running broker's store (GET /admin/backup) to FILE: written to a
temporary file beside it, synced, then renamed, so FILE is whole or absent. Every message the
broker acknowledged before the backup began is in the copy. To restore, start a broker with the
copy as oncemq.db in its --data folder.

  --out FILE          where to save the copy (required)
  --http ADDR         the admin listener; default $ONCEMQ_HTTP_LISTEN, else ` + admin.DefaultAddr + `
  --token-file FILE   the admin token; default $ONCEMQ_ADMIN_TOKEN (serve's --admin-token)
`

// Main runs the backup.
func Main(args []string, env cli.Env) int {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("http", "", "")
	out := fs.String("out", "", "")
	tokenFile := fs.String("token-file", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(env.Stdout, usage)
			return cli.ExitOK
		}
		return cli.UsageError(env.Stderr, "oncemq backup", err.Error(), "oncemq backup --help")
	}
	switch {
	case fs.NArg() > 0:
		return cli.UsageError(env.Stderr, "oncemq backup", fmt.Sprintf("unexpected argument %q", fs.Arg(0)), "oncemq backup --help")
	case *out == "":
		return cli.UsageError(env.Stderr, "oncemq backup", "--out FILE is required", "oncemq backup --help")
	}
	*addr = firstOf(*addr, env.Getenv("ONCEMQ_HTTP_LISTEN"), admin.DefaultAddr)
	*tokenFile = firstOf(*tokenFile, env.Getenv("ONCEMQ_ADMIN_TOKEN"))
	token := ""
	if *tokenFile != "" {
		var err error
		if token, err = admin.ReadToken(*tokenFile); err != nil {
			fmt.Fprintf(env.Stderr, "oncemq backup: %v\n", err)
			return cli.ExitFailure
		}
	}
	n, err := save(admin.BaseURL(*addr)+"/admin/backup", token, *out)
	if err != nil {
		fmt.Fprintf(env.Stderr, "oncemq backup: %v\n", err)
		return cli.ExitFailure
	}
	fmt.Fprintf(env.Stdout, "saved %d bytes to %s\n", n, *out)
	return cli.ExitOK
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}

// save downloads url into a temporary file beside out, syncs it and renames it to out.
func save(url, token, out string) (int64, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, fmt.Errorf("%s answered %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), filepath.Base(out)+".partial-*")
	if err != nil {
		return 0, fmt.Errorf("create the temporary file: %w", err)
	}
	defer os.Remove(tmp.Name()) // gone after the rename; removes a partial copy otherwise
	n, err := io.Copy(tmp, resp.Body)
	if err != nil {
		tmp.Close()
		return n, fmt.Errorf("download %s: %w (after %d bytes)", url, err, n)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return n, fmt.Errorf("sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return n, fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return n, fmt.Errorf("rename to %s: %w", out, err)
	}
	return n, syncDir(filepath.Dir(out))
}

// syncDir makes the rename durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
