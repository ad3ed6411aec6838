package auth

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Passwords is a password file in mosquitto's format: one `user:hash` line per user; blank lines and
// lines starting with # are skipped. It is read-only once loaded: a change is a new Passwords.
type Passwords struct {
	users map[string]hash
	dummy hash // verified for an unknown user, so that it costs what a known one does
}

// LoadPasswords reads the password file at path. A line that is not `user:hash`, a user named twice
// or a hash of an unknown format is an error naming the file and the line.
func LoadPasswords(path string) (*Passwords, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("password file: %w", err)
	}
	defer f.Close()
	return ParsePasswords(f, path)
}

// ParsePasswords reads a password file from r; name is the file's name for errors.
func ParsePasswords(r io.Reader, name string) (*Passwords, error) {
	p := &Passwords{users: make(map[string]hash)}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, encoded, ok := strings.Cut(line, ":")
		if !ok || user == "" || encoded == "" {
			return nil, fmt.Errorf("%s:%d: want user:hash", name, n)
		}
		if _, dup := p.users[user]; dup {
			return nil, fmt.Errorf("%s:%d: user %q is listed twice", name, n, user)
		}
		h, err := parseHash(encoded)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: user %q: %w", name, n, user, err)
		}
		p.users[user] = h
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	dummy, err := HashPassword([]byte("unknown user"), DefaultIterations)
	if err != nil {
		return nil, err
	}
	p.dummy, _ = parseHash(dummy)
	return p, nil
}

// ErrBadPassword is what Check returns for an unknown user and for a wrong password alike.
var ErrBadPassword = errors.New("bad username or password")

// Check verifies user's password. An unknown user costs one verification too, so that the time
// of the answer does not tell unknown users from wrong passwords. known says which it was, for the
// log only.
func (p *Passwords) Check(user string, password []byte) (known bool, err error) {
	h, known := p.users[user]
	if !known {
		p.dummy.verify(password)
		return false, ErrBadPassword
	}
	if !h.verify(password) {
		return true, ErrBadPassword
	}
	return true, nil
}

// Weak lists, sorted, the users whose hash is the old $6$ (one salted SHA-512, fast to guess):
// `oncemq passwd` or `mosquitto_passwd` again writes them as $7$.
func (p *Passwords) Weak() []string {
	var weak []string
	for u, h := range p.users {
		if h.weak() {
			weak = append(weak, u)
		}
	}
	slices.Sort(weak)
	return weak
}

// Len is the number of users.
func (p *Passwords) Len() int { return len(p.users) }
