package childproc

import (
	"bytes"
	"fmt"
	"regexp"
	"sync"
	"time"
)

// Buffer keeps a child's output in memory, as a Spec's Output, so that a caller can wait for a
// line (the address a server logs once it listens) and show the whole output when something
// fails. The zero Buffer is ready to use; it is safe for concurrent use.
type Buffer struct {
	mu      sync.Mutex // guards the following
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced at each Write
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
	return len(p), nil
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// match returns re's first match in the output and a channel closed at the next Write.
func (b *Buffer) match(re *regexp.Regexp) ([]string, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if m := re.FindSubmatch(b.buf.Bytes()); m != nil {
		s := make([]string, len(m))
		for i := range m {
			s[i] = string(m[i])
		}
		return s, nil
	}
	if b.changed == nil {
		b.changed = make(chan struct{})
	}
	return nil, b.changed
}

// WaitMatch waits up to timeout until the output matches re and returns the match and its
// submatches. It gives up when ended is closed (pass the Proc's Done: the output is complete then)
// and re still does not match.
func (b *Buffer) WaitMatch(re *regexp.Regexp, timeout time.Duration, ended <-chan struct{}) ([]string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		m, changed := b.match(re)
		if m != nil {
			return m, nil
		}
		select {
		case <-changed:
		case <-ended:
			if m, _ := b.match(re); m != nil {
				return m, nil
			}
			return nil, fmt.Errorf("the process ended before its output matched %q", re)
		case <-t.C:
			return nil, fmt.Errorf("the output did not match %q within %v", re, timeout)
		}
	}
}
