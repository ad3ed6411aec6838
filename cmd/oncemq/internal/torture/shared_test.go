package torture

import (
	"strings"
	"testing"
)

// The group's verdict is the members' union: a message no member got is lost, one two members got
// is duplicated, even though each member's own line is clean.
func TestGroupResultJudgesTheUnion(t *testing.T) {
	members := []*subscriber{
		{tally: newTally(1, 4), res: SubscriberResult{Name: "member1"}, group: &shareGroup{}},
		{tally: newTally(1, 4), res: SubscriberResult{Name: "member2"}, group: &shareGroup{}},
	}
	members[0].tally.add(msgKey{0, 0}, delivery{})
	members[0].tally.add(msgKey{0, 1}, delivery{})
	members[1].tally.add(msgKey{0, 1}, delivery{}) // also to member1: a duplicate for the group
	members[1].tally.add(msgKey{0, 2}, delivery{})
	exp := newExpectation(1, 4, nil) // message 3 reached nobody
	r := groupResult(members, exp)
	if r.Expected != 4 || r.Lost != 1 || r.Duplicated != 1 || r.Distinct != 3 {
		t.Fatalf("group line %+v: want expected 4, lost 1, duplicated 1, distinct 3", r)
	}
	if len(r.DupSample) != 1 || !strings.Contains(r.DupSample[0], "member1") || !strings.Contains(r.DupSample[0], "member2") {
		t.Errorf("duplicate sample %q should name both members", r.DupSample)
	}
	for _, m := range members {
		if l := m.result(noExpectation); l.Lost != 0 || l.Duplicated != 0 || l.Expected != 0 {
			t.Errorf("%s line %+v: a member's own line expects nothing", m.res.Name, l)
		}
	}
	pass, why := verdict([]SubscriberResult{members[0].result(noExpectation), members[1].result(noExpectation), r}, nil, "", "")
	if pass || len(why) != 2 {
		t.Errorf("verdict %t %q: want a failure for the lost and the duplicated message", pass, why)
	}
}
