package mqtt

import (
	"sync"
	"time"

	"github.com/oncemq/oncemq/session/reason"
)

// budgetFloor is the body size below which a packet is read without asking the read budget: small
// packets are the common case and cost little, and the budget is there for the large ones.
const budgetFloor = 4 << 10

// readBudget bounds the bytes of the packets being read at once over every connection
// (Options.ReadBudgetBytes): the body of a packet is allocated at its declared length before it
// arrives, so without a budget 1,500 peers that each send most of a 1 MiB PUBLISH and then stall
// would hold 1.5 GB. A packet that does not fit waits for room, up to its deadline.
type readBudget struct {
	mu    sync.Mutex
	used  int64
	limit int64
	freed chan struct{} // closed and replaced when bytes are given back; nil while no one waits
}

// acquire takes n bytes of the budget, waiting until deadline for room. One packet larger than
// the whole budget is let through alone.
func (b *readBudget) acquire(n int, deadline time.Time) error {
	timer := (*time.Timer)(nil)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		b.mu.Lock()
		if b.used == 0 || b.used+int64(n) <= b.limit {
			b.used += int64(n)
			b.mu.Unlock()
			return nil
		}
		if b.freed == nil {
			b.freed = make(chan struct{})
		}
		freed := b.freed
		b.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(time.Until(deadline))
		}
		select {
		case <-freed:
		case <-timer.C:
			return &protocolError{code: reason.ServerBusy, msg: "read budget exhausted: too many large packets being read"}
		}
	}
}

// release gives n bytes back.
func (b *readBudget) release(n int) {
	b.mu.Lock()
	b.used -= int64(n)
	if b.freed != nil {
		close(b.freed)
		b.freed = nil
	}
	b.mu.Unlock()
}
