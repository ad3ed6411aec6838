package admin

import (
	"errors"
	"fmt"
)

// readiness is nil when the broker can take work: its store is recovered and accepts commits, and
// its MQTT listener is open. It is the one place /readyz and `oncemq health` depend on: when package
// mqtt tells readiness itself (a store that fails and heals), this is what switches to it.
func (a *Admin) readiness() error {
	srv := a.server()
	if srv == nil {
		return errors.New("recovering the store")
	}
	if err := srv.StoreErr(); err != nil {
		return fmt.Errorf("store failed, restart needed: %w", err)
	}
	if !a.listening.Load() {
		return errors.New("MQTT listener not open")
	}
	return nil
}
