package passwd

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oncemq/oncemq/cmd/internal/childproc"
	"github.com/oncemq/oncemq/cmd/oncemq/internal/cli"
	"github.com/oncemq/oncemq/mqtt/auth"
)

func runPasswd(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := Main(args, cli.Env{Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }})
	return code, out.String()
}

// -c creates, a second user is appended, a change replaces the line, -D deletes; comments stay.
func TestPasswdEditsTheFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "passwd")
	for _, args := range [][]string{
		{"-c", "-b", "a-pw", "-I", "1000", file, "alice"},
		{"-b", "b-pw", "-I", "1000", file, "bob"},
		{"-b", "a-pw2", "-I", "1000", file, "alice"},
	} {
		if code, out := runPasswd(t, args...); code != cli.ExitOK {
			t.Fatalf("passwd %q: exit %d\n%s", args, code, out)
		}
	}
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o600 {
		t.Errorf("new file mode %v, want 0600", st.Mode().Perm())
	}
	p, err := auth.LoadPasswords(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Check("alice", []byte("a-pw2")); err != nil || p.Len() != 2 {
		t.Errorf("alice's changed password: %v (users %d, want 2)", err, p.Len())
	}
	if code, out := runPasswd(t, "-D", file, "bob"); code != cli.ExitOK {
		t.Fatalf("-D: exit %d\n%s", code, out)
	}
	if code, _ := runPasswd(t, "-D", file, "bob"); code != cli.ExitFailure {
		t.Errorf("-D of a missing user: exit %d, want %d", code, cli.ExitFailure)
	}
	if code, _ := runPasswd(t, "-b", "x", file, "a:b"); code != cli.ExitUsage {
		t.Errorf("user with a colon: exit %d, want %d", code, cli.ExitUsage)
	}
	b, _ := os.ReadFile(file)
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "alice:$7$1000$") {
		t.Errorf("file after -D bob:\n%s", b)
	}
}

// The real mosquitto broker accepts a user written by oncemq passwd (with the default, strong
// iteration count) and refuses a wrong password for it.
func TestMosquittoAcceptsOncemqPasswd(t *testing.T) {
	for _, tool := range []string{"mosquitto", "mosquitto_pub"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: install it with apt-get install -y mosquitto mosquitto-clients", tool)
		}
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "passwd")
	if code, out := runPasswd(t, "-c", "-b", "s3cret", file, "dev"); code != cli.ExitOK {
		t.Fatalf("passwd: exit %d\n%s", code, out)
	}
	port := freePort(t)
	conf := filepath.Join(dir, "mosquitto.conf")
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	// user: mosquitto started as root would switch to user mosquitto, who cannot read the test's files.
	cfg := "user " + me.Username + "\nlistener " + port + " 127.0.0.1\nallow_anonymous false\npassword_file " + file + "\n"
	if err := os.WriteFile(conf, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var log childproc.Buffer
	proc, err := childproc.Start(childproc.Spec{Path: "mosquitto", Args: []string{"-c", conf}, Output: &log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Kill(5 * time.Second) })
	if err := proc.WaitAccepting(context.Background(), "127.0.0.1:"+port, 10*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	pub := func(password string) error {
		return exec.Command("mosquitto_pub", "-h", "127.0.0.1", "-p", port, "-u", "dev", "-P", password,
			"-t", "t", "-m", "x", "-q", "1").Run()
	}
	if err := pub("s3cret"); err != nil {
		t.Errorf("mosquitto refused the user oncemq passwd wrote: %v\n%s", err, log.String())
	}
	if err := pub("wrong"); err == nil {
		t.Errorf("mosquitto accepted a wrong password")
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}
