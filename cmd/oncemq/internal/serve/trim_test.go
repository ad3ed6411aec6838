package serve

import (
	"testing"
	"time"
)

// The trimming loop that serve starts stops when asked, so that serve returns without leaving it
// running.
func TestTrimmingStops(t *testing.T) {
	stop := startTrimming()
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the trimming loop did not stop")
	}
}
