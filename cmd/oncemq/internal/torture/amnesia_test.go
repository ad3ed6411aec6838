package torture

import (
	"strings"
	"testing"

	"github.com/oncemq/oncemq/cmd/internal/oncemqtest"
)

// Publishers that lose their state at every kill resend what is not complete under new packet
// ids: the broker's dedup ids keep every message exactly once, at QoS 2 and at QoS 1.
func TestTortureAmnesiaWithDedupPasses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real broker")
	}
	bin := oncemqtest.Build(t)
	for _, qos := range []string{"2", "1"} {
		t.Run("qos"+qos, func(t *testing.T) {
			code, out, rep := tortureJSON(t, bin, "-p", "2", "-s", "1", "-n", "300", "-k", "4", "--seed", "7",
				"--publisher-amnesia", "--qos", qos)
			if code != 0 || !rep.Pass {
				t.Fatalf("exit %d, pass %v; want 0 and PASS:\n%s", code, rep.Pass, out)
			}
			if s := rep.Totals; s.Distinct != 600 || s.Lost != 0 || s.Duplicated != 0 {
				t.Errorf("totals %+v; want 600 distinct, none lost or duplicated", s)
			}
			resent := 0
			for _, p := range rep.PublisherLines {
				resent += p.ResentPublish
			}
			if resent == 0 {
				t.Errorf("no PUBLISH resent after an amnesia: the run proves nothing:\n%s", out)
			}
		})
	}
}

// The same run with the broker's dedup off (--dedup-max 0) delivers the resends again, and the
// check says so: the amnesia mode can fail.
func TestTortureAmnesiaWithoutDedupReportsDuplicates(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real broker")
	}
	bin := oncemqtest.Build(t)
	code, out, rep := tortureJSON(t, bin, "-p", "2", "-s", "1", "-n", "300", "-k", "4", "--seed", "7",
		"--publisher-amnesia", "--dedup-off")
	if code != 1 || rep.Pass || !strings.Contains(out, "messages duplicated") {
		t.Fatalf("exit %d, pass %v; want 1 and FAIL with duplicates:\n%s", code, rep.Pass, out)
	}
	if rep.Totals.Duplicated == 0 || rep.Totals.Lost != 0 {
		t.Errorf("totals %+v; want duplicates and nothing lost", rep.Totals)
	}
}

// A QoS 1 delivery again with DUP=1 and the first's packet id is the broker's own resend, counted
// apart; anything else delivered again is a duplicate.
func TestTallyQoS1Redelivery(t *testing.T) {
	tl := newTally(1, 3)
	k := msgKey{0, 1}
	tl.addQoS1(k, delivery{id: 5})
	tl.addQoS1(k, delivery{id: 5, dup: true}) // resent after a restart
	tl.addQoS1(k, delivery{id: 6, dup: true}) // another id: routed twice
	tl.addQoS1(k, delivery{id: 5})            // DUP=0: a new routing
	r := tl.result(newExpectation(1, 3, nil))
	if r.QoS1Redeliveries != 1 || r.Duplicated != 2 || r.Distinct != 1 {
		t.Fatalf("result %+v; want 1 QoS 1 redelivery, 2 duplicates, 1 distinct", r)
	}
}
