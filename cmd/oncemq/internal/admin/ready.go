package admin

import (
	"errors"
	"fmt"
)

// readiness is nil when the broker can take work: its store is recovered and accepts commits
// (mqtt.Server.Readiness), and serve has handed its MQTT listeners to the Server (a.listening: set
// before the Serve goroutines run, so that /readyz does not race them). It is the one place
// /readyz and `oncemq health` depend on.
func (a *Admin) readiness() error {
	srv := a.server()
	if srv == nil {
		return errors.New("recovering the store")
	}
	r := srv.Readiness()
	switch {
	case !r.Recovered && r.Err != nil:
		return fmt.Errorf("store failed, reopening it: %w", r.Err)
	case !r.StoreWritable:
		return fmt.Errorf("store failed: %w", r.Err)
	case !a.listening.Load():
		return errors.New("MQTT listener not open")
	}
	return nil
}
