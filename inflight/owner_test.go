package inflight

import (
	"path/filepath"
	"testing"
)

// A session record written before sessions had owners has no "Owner" key: it decodes with Owner nil
// (its session belongs to the first identity that resumes it), while "" stays an anonymous owner.
func TestSessionRecordOwnerIsCompatible(t *testing.T) {
	old := append([]byte{formatVersion}, `{"ClientID":"c","ProtocolVersion":4,"ExpiryInterval":60,"DisconnectedAt":0,"Will":null}`...)
	var r SessionRecord
	if err := decodeJSON(old, &r); err != nil || r.Owner != nil || r.ClientID != "c" {
		t.Fatalf("record of an earlier release: %+v, %v; want Owner nil", r, err)
	}
	anon := ""
	v, err := encodeJSON(SessionRecord{ClientID: "c", Owner: &anon})
	if err != nil {
		t.Fatal(err)
	}
	var back SessionRecord
	if err := decodeJSON(v, &back); err != nil || back.Owner == nil || *back.Owner != "" {
		t.Fatalf("anonymous owner round trip: %+v, %v; want Owner pointing at \"\"", back, err)
	}
}

// The owner survives a close and reopen of a real store.
func TestSessionOwnerSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oncemq.db")
	j, _, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	alice := "alice"
	b := &Batch{}
	b.PutSession(SessionRecord{ClientID: "dev", ProtocolVersion: 5, ExpiryInterval: 60, Owner: &alice})
	done := make(chan error, 1)
	j.Submit(b, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j, rec, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if len(rec.Sessions) != 1 || rec.Sessions[0].Record.Owner == nil || *rec.Sessions[0].Record.Owner != "alice" {
		t.Fatalf("recovered %+v, want dev owned by alice", rec.Sessions)
	}
}
