package serve

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// startReloading runs every function of reloads at each SIGHUP, in order, logging each failure
// (a reload that fails keeps what it had, and says why); connections stay open. The function it
// returns stops listening for SIGHUP and waits for a reload under way.
func startReloading(reloads []func() error, log *slog.Logger) (stop func()) {
	hups := make(chan os.Signal, 1)
	signal.Notify(hups, syscall.SIGHUP)
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-hups:
			}
			failed := 0
			for _, reload := range reloads {
				if err := reload(); err != nil {
					log.Error("reload failed", "err", err)
					failed++
				}
			}
			log.Info("reloaded on SIGHUP", "reloads", len(reloads), "failed", failed)
		}
	}()
	return func() {
		signal.Stop(hups)
		close(done)
		<-stopped
	}
}
