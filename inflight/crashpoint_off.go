//go:build !failpoint

package inflight

// crashPoint does nothing: this build has no crash points.
func crashPoint(string) {}
