package inflight

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Dedup scopes: what a publisher's dedup id is unique within.
const (
	DedupScopeClient byte = 'c' // (client id, dedup id): one publisher's own ids
	DedupScopeTopic  byte = 't' // (topic, dedup id): several gateways forwarding the same reading
)

// DedupRecord is one dedup id in the window, bucket dedup, key Key: a message accepted with this id
// at At (unix nanoseconds) and answered with Reason (below 0x80). A copy that arrives while the
// record is in the window is answered with Reason and not routed.
type DedupRecord struct {
	Key    string // DedupKey(scope, name, id)
	At     int64
	Reason byte
}

// DedupKey is the key of a dedup id: the scope byte, the length of name as a uvarint, name (the
// client id or the topic), then the id itself. The length makes the split exact whatever the
// strings hold.
func DedupKey(scope byte, name, id string) string {
	k := make([]byte, 0, 1+binary.MaxVarintLen64+len(name)+len(id))
	k = append(k, scope)
	k = binary.AppendUvarint(k, uint64(len(name)))
	k = append(k, name...)
	return string(append(k, id...))
}

// SplitDedupKey is the inverse of DedupKey; ok is false for a key it could not have made.
func SplitDedupKey(k string) (scope byte, name, id string, ok bool) {
	if len(k) < 2 || k[0] != DedupScopeClient && k[0] != DedupScopeTopic {
		return 0, "", "", false
	}
	n, w := binary.Uvarint([]byte(k[1:min(len(k), 1+binary.MaxVarintLen64)]))
	if w <= 0 || n == 0 || n > uint64(len(k)-1-w) {
		return 0, "", "", false
	}
	name = k[1+w : 1+w+int(n)]
	id = k[1+w+int(n):]
	if id == "" || !utf8.ValidString(name) || !utf8.ValidString(id) {
		return 0, "", "", false
	}
	return k[0], name, id, true
}

// maxDedupKey bounds a key: a topic or client id and an id, each an MQTT string of at most 65535
// bytes, with the scope and length. bbolt keys must stay well under its page limits.
const maxDedupKey = 1 + 3 + 2*65535

func validDedupKey(k string) error {
	if len(k) > maxDedupKey {
		return fmt.Errorf("dedup key of %d bytes", len(k))
	}
	if _, _, _, ok := SplitDedupKey(k); !ok {
		return errors.New("dedup key malformed")
	}
	return nil
}

func encodeDedup(r *DedupRecord) []byte {
	v := make([]byte, 0, 10)
	v = append(v, formatVersion)
	v = binary.BigEndian.AppendUint64(v, uint64(r.At))
	return append(v, r.Reason)
}

func decodeDedup(k, v []byte) (DedupRecord, error) {
	if err := checkVersion(v); err != nil {
		return DedupRecord{}, err
	}
	if len(v) != 10 {
		return DedupRecord{}, fmt.Errorf("dedup value is %d bytes, want 10", len(v))
	}
	r := DedupRecord{Key: string(k), At: int64(binary.BigEndian.Uint64(v[1:])), Reason: v[9]}
	if err := validDedupKey(r.Key); err != nil {
		return r, err
	}
	if r.Reason >= 0x80 {
		return r, fmt.Errorf("dedup reason 0x%02X: only accepted messages are remembered", r.Reason)
	}
	return r, nil
}

// PutDedup records a dedup id, in the batch that routes its message: the id and the fan-out are
// durable together or not at all.
func (b *Batch) PutDedup(rec DedupRecord) {
	b.ops = append(b.ops, op{kind: opPutDedup, dedup: &rec})
}

// DeleteDedup removes a dedup id that left the window.
func (b *Batch) DeleteDedup(key string) {
	b.ops = append(b.ops, op{kind: opDeleteDedup, topic: key})
}

func (r *recovery) readDedup(k, v []byte) error {
	d, err := decodeDedup(k, v)
	if err != nil {
		return err
	}
	r.dedup = append(r.dedup, d)
	return nil
}
