package inflight

import (
	"errors"
	"reflect"
	"testing"
)

// TestDedupKeySplitsExactly: the length prefix keeps (client, id) pairs apart whose
// concatenations are equal, so that two different messages never share a key.
func TestDedupKeySplitsExactly(t *testing.T) {
	a := DedupKey(DedupScopeClient, "ab", "c")
	b := DedupKey(DedupScopeClient, "a", "bc")
	if a == b {
		t.Fatalf("(ab, c) and (a, bc) have the same key %q", a)
	}
	for _, k := range []string{a, b, DedupKey(DedupScopeTopic, "t/x\x00y", "id\x00")} {
		scope, name, id, ok := SplitDedupKey(k)
		if !ok || DedupKey(scope, name, id) != k {
			t.Errorf("SplitDedupKey(%q) = %c %q %q %t", k, scope, name, id, ok)
		}
	}
	for _, bad := range []string{"", "c", "x\x01ab", "c\x05ab", "c\x01a"} {
		if _, _, _, ok := SplitDedupKey(bad); ok {
			t.Errorf("SplitDedupKey(%q) accepted", bad)
		}
	}
}

// TestDedupRecordsSurviveReopen: a dedup id put in a batch is read back by Open with its time and
// reason, outlives the deletion of its client's session, and a delete removes it.
func TestDedupRecordsSurviveReopen(t *testing.T) {
	path := testPath(t)
	j, _, _ := openTest(t, path, nil)
	k1 := DedupKey(DedupScopeClient, "dev", "r-1")
	k2 := DedupKey(DedupScopeTopic, "sensors/1", "r-2")
	b := &Batch{}
	b.PutSession(SessionRecord{ClientID: "dev", ProtocolVersion: 5, ExpiryInterval: 60})
	b.PutDedup(DedupRecord{Key: k1, At: 100, Reason: 0x00})
	b.PutDedup(DedupRecord{Key: k2, At: 200, Reason: 0x10})
	mustCommit(t, j, b)
	b = &Batch{}
	b.DeleteSession("dev") // a Clean Start: the dedup id must stay
	mustCommit(t, j, b)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	j, rec, _ := openTest(t, path, nil)
	want := []DedupRecord{{Key: k1, At: 100, Reason: 0x00}, {Key: k2, At: 200, Reason: 0x10}}
	if !reflect.DeepEqual(rec.Dedup, want) {
		t.Fatalf("recovered dedup ids %+v, want %+v", rec.Dedup, want)
	}
	b = &Batch{}
	b.DeleteDedup(k1)
	mustCommit(t, j, b)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if got := rawKeys(t, path, bucketDedup); !reflect.DeepEqual(got, []string{k2}) {
		t.Fatalf("dedup keys after the delete: %q, want %q", got, []string{k2})
	}
}

// TestDedupRefusedReasonIsInvalid: a refused message must stay retryable, so a batch that would
// remember one is refused.
func TestDedupRefusedReasonIsInvalid(t *testing.T) {
	j, _, _ := openTest(t, "", nil)
	b := &Batch{}
	b.PutDedup(DedupRecord{Key: DedupKey(DedupScopeClient, "c", "x"), At: 1, Reason: 0x97})
	if err := commit(t, j, b); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("commit: %v, want ErrInvalidBatch", err)
	}
}
