package auth

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// mosquittoPasswd runs the real mosquitto_passwd with args, failing the test if it is missing.
func mosquittoPasswd(t *testing.T, args ...string) {
	t.Helper()
	if _, err := exec.LookPath("mosquitto_passwd"); err != nil {
		t.Fatal("mosquitto_passwd not found: install it with apt-get install -y mosquitto")
	}
	if out, err := exec.Command("mosquitto_passwd", args...).CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_passwd %q: %v\n%s", args, err, out)
	}
}

// A file written by the real mosquitto_passwd, $7$ (its default) and $6$ (-H sha512), plus a bcrypt
// line and an argon2id line in the encoding newer mosquitto writes (libargon2's), generated here:
// each user's own password is accepted, a wrong one and an unknown user are refused alike, and the
// $6$ user is reported weak.
func TestPasswordsReadsWhatMosquittoWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "passwd")
	mosquittoPasswd(t, "-c", "-b", path, "alice", "alice-pw")
	mosquittoPasswd(t, "-H", "sha512-pbkdf2", "-b", path, "bob", "bob pw with spaces")
	mosquittoPasswd(t, "-H", "sha512", "-b", path, "old", "old-pw")
	bc, err := bcrypt.GenerateFromPassword([]byte("carol-pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	salt := []byte("0123456789abcdef")
	sum := argon2.IDKey([]byte("dave-pw"), salt, 1, 47104, 1, 64)
	argon := fmt.Sprintf("$argon2id$v=19$m=47104,t=1,p=1$%s$%s", base64.RawStdEncoding.EncodeToString(salt),
		base64.RawStdEncoding.EncodeToString(sum))
	appendLines(t, path, "# added by hand", "", "carol:"+string(bc), "yves:"+strings.Replace(string(bc), "$2a$", "$2y$", 1), "dave:"+argon)

	p, err := LoadPasswords(path)
	if err != nil {
		t.Fatal(err)
	}
	for user, pw := range map[string]string{"alice": "alice-pw", "bob": "bob pw with spaces", "old": "old-pw",
		"carol": "carol-pw", "yves": "carol-pw", "dave": "dave-pw"} {
		if known, err := p.Check(user, []byte(pw)); !known || err != nil {
			t.Errorf("%s with the right password: known=%t err=%v", user, known, err)
		}
		if known, err := p.Check(user, []byte(pw+"x")); !known || err != ErrBadPassword {
			t.Errorf("%s with a wrong password: known=%t err=%v, want ErrBadPassword", user, known, err)
		}
	}
	if known, err := p.Check("mallory", []byte("alice-pw")); known || err != ErrBadPassword {
		t.Errorf("unknown user: known=%t err=%v, want the same error as a wrong password", known, err)
	}
	if w := p.Weak(); len(w) != 1 || w[0] != "old" {
		t.Errorf("Weak() = %q, want [old]", w)
	}
}

// A hash that no known format starts, a line without a colon or a user listed twice stops the
// load with the file and the line.
func TestPasswordsRefusesBadLinesWithFileAndLine(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"alice:$1$abc$def\n", ":1: user \"alice\": unknown password hash format"},
		{"# c\nbob:plaintext\n", ":2: user \"bob\": unknown password hash format"},
		{"\n\nno colon here\n", ":3: want user:hash"},
		{"a:$7$x$AAAA$AAAA\n", ":1: user \"a\": $7$ hash: iteration count"},
		{"a:$6$AAAA$AAAA\n", ":1: user \"a\": $6$ hash: hash is not 64 bytes"},
	} {
		path := filepath.Join(t.TempDir(), "passwd")
		if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadPasswords(path)
		if err == nil || !strings.Contains(err.Error(), path+tc.want) {
			t.Errorf("file %q: error %v, want it to contain %q", tc.file, err, path+tc.want)
		}
	}
}

// HashPassword writes $7$ with the iteration count in the string; Passwords reads it back.
func TestHashPasswordRoundTrip(t *testing.T) {
	h, err := HashPassword([]byte("pw"), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$7$1000$") {
		t.Fatalf("hash %q, want $7$1000$...", h)
	}
	p, err := ParsePasswords(strings.NewReader("u:"+h+"\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Check("u", []byte("pw")); err != nil {
		t.Errorf("round trip: %v", err)
	}
}

func appendLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
}
