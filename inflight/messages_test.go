package inflight

import "testing"

// Messages.Get finds every message and no other, whether the sequences are a run (where the guess
// is the place) or spread unevenly (where it is not, and the bisection finds it).
func TestMessagesGet(t *testing.T) {
	for _, seqs := range [][]uint64{
		{7},
		{1, 2, 3, 4, 5, 6, 7, 8},
		{1, 2, 3, 1000, 1001, 1 << 40, 1<<40 + 1, 1<<63 + 5},
		{3, 5, 9, 10, 11, 12, 13, 14, 15, 90},
	} {
		var ms Messages
		present := make(map[uint64]bool)
		for _, seq := range seqs {
			ms = append(ms, &Handle{Seq: seq})
			present[seq] = true
		}
		for _, seq := range seqs {
			for _, probe := range []uint64{seq - 1, seq, seq + 1} {
				h := ms.Get(probe)
				switch {
				case present[probe] && (h == nil || h.Seq != probe):
					t.Errorf("%v: Get(%d) = %v, want the message", seqs, probe, h)
				case !present[probe] && h != nil:
					t.Errorf("%v: Get(%d) = message %d, want nil", seqs, probe, h.Seq)
				}
			}
		}
	}
	if (Messages{}).Get(1) != nil {
		t.Error("Get on no messages found one")
	}
}
