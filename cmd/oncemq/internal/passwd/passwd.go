// Package passwd is `oncemq passwd FILE USER`: it adds a user to a password file in mosquitto's
// format, changes a user's password, or deletes a user, like mosquitto_passwd. It writes $7$
// (PBKDF2-SHA512) with a strong iteration count, which both oncemq and mosquitto read.
package passwd

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/oncemq/oncemq/cmd/oncemq/internal/cli"
	"github.com/oncemq/oncemq/mqtt/auth"
)

const usage = `Usage: oncemq passwd [-c] [-b PASSWORD] [-I ITERATIONS] FILE USER
       oncemq passwd -D FILE USER

Add USER to the password file FILE (mosquitto's format), or change its password. The password
is asked twice on a terminal, without echo, or read as one line from a pipe; -b gives it on the
command line instead (it then shows in the process list and the shell history).

  -c             create FILE, replacing it if it exists
  -D             delete USER
  -b PASSWORD    the password, for scripts
  -I ITERATIONS  PBKDF2 rounds (default %d); the count is stored in the hash

Reload a running broker's password file with SIGHUP.
`

// Main runs `oncemq passwd`.
func Main(args []string, env cli.Env) int {
	fs := flag.NewFlagSet("passwd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	create := fs.Bool("c", false, "")
	del := fs.Bool("D", false, "")
	password := fs.String("b", "", "")
	iterations := fs.Int("I", auth.DefaultIterations, "")
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(env.Stdout, usage, auth.DefaultIterations)
		return cli.ExitOK
	}
	switch {
	case err != nil:
		return cli.UsageError(env.Stderr, "oncemq passwd", err.Error(), "oncemq passwd --help")
	case fs.NArg() != 2:
		return cli.UsageError(env.Stderr, "oncemq passwd", "want FILE USER", "oncemq passwd --help")
	case *create && *del:
		return cli.UsageError(env.Stderr, "oncemq passwd", "-c and -D together", "oncemq passwd --help")
	case *iterations < 1:
		return cli.UsageError(env.Stderr, "oncemq passwd", "-I wants a whole number of at least 1", "oncemq passwd --help")
	}
	file, user := fs.Arg(0), fs.Arg(1)
	if err := validUser(user); err != nil {
		return cli.UsageError(env.Stderr, "oncemq passwd", err.Error(), "oncemq passwd --help")
	}
	if err := run(file, user, *create, *del, *password, *iterations, env.Stderr); err != nil {
		fmt.Fprintf(env.Stderr, "oncemq passwd: %v\n", err)
		return cli.ExitFailure
	}
	return cli.ExitOK
}

// validUser refuses a name the file cannot hold: empty, with a colon (the separator) or a line end.
func validUser(user string) error {
	if user == "" || strings.ContainsAny(user, ":\r\n") {
		return fmt.Errorf("user name %q: must be non-empty, without ':' or a line end", user)
	}
	return nil
}

// run changes the file: deletes user, or sets its hash, asking for the password if none was given.
func run(file, user string, create, del bool, password string, iterations int, prompt io.Writer) error {
	var lines []string
	if !create {
		var err error
		if lines, err = readLines(file); err != nil {
			return err
		}
	}
	if del {
		kept, found := setUser(lines, user, "")
		if !found {
			return fmt.Errorf("%s: no user %q", file, user)
		}
		return writeLines(file, kept)
	}
	if password == "" {
		var err error
		if password, err = askPassword(prompt); err != nil {
			return err
		}
	}
	hash, err := auth.HashPassword([]byte(password), iterations)
	if err != nil {
		return err
	}
	lines, _ = setUser(lines, user, user+":"+hash)
	return writeLines(file, lines)
}

// setUser replaces user's line with line ("" deletes it), or appends line; comments and other
// users stay as they were. found says whether user was there.
func setUser(lines []string, user, line string) (out []string, found bool) {
	for _, l := range lines {
		if name, _, ok := strings.Cut(l, ":"); ok && name == user && !strings.HasPrefix(l, "#") {
			found = true
			if line != "" {
				out = append(out, line)
			}
			continue
		}
		out = append(out, l)
	}
	if !found && line != "" {
		out = append(out, line)
	}
	return out, found
}

// askPassword reads the password: twice without echo on a terminal, or one line from a pipe.
func askPassword(prompt io.Writer) (string, error) {
	fd := int(os.Stdin.Fd())
	if !term.IsTerminal(fd) {
		line, err := bufio.NewReader(os.Stdin).ReadString('\n')
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			return "", fmt.Errorf("no password on standard input: %v", err)
		}
		return line, nil
	}
	fmt.Fprint(prompt, "Password: ")
	first, err := term.ReadPassword(fd)
	fmt.Fprintln(prompt)
	if err != nil {
		return "", fmt.Errorf("read password: %w", err)
	}
	fmt.Fprint(prompt, "Reenter password: ")
	second, err := term.ReadPassword(fd)
	fmt.Fprintln(prompt)
	if err != nil {
		return "", fmt.Errorf("read password: %w", err)
	}
	if string(first) != string(second) {
		return "", errors.New("passwords do not match")
	}
	if len(first) == 0 {
		return "", errors.New("empty password")
	}
	return string(first), nil
}

func readLines(file string) ([]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%w (use -c to create it)", err)
	}
	s := strings.TrimRight(string(b), "\n")
	if s == "" {
		return nil, nil
	}
	return strings.Split(s, "\n"), nil
}

// writeLines replaces file with lines through a new file renamed over it, so that a broker
// reloading it never reads half a file. A new file is readable by its owner only.
func writeLines(file string, lines []string) error {
	mode := os.FileMode(0o600)
	if st, err := os.Stat(file); err == nil {
		mode = st.Mode().Perm()
	}
	tmp := file + ".tmp"
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	if err := os.WriteFile(tmp, []byte(b.String()), mode); err != nil {
		return err
	}
	if err := os.Rename(tmp, file); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
