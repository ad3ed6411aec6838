package main

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A Batch is what one oncemq acknowledgement waits for when a QoS 2 PUBLISH arrives: the
// inbound packet id, the message, and one fan-out record per matching subscriber, committed
// atomically. Owner and Epoch are the session ownership the write is fenced by.
type Batch struct {
	ID      uint64
	Owner   string
	Epoch   uint64
	Records []Record
}

// A Record is one key written by a batch, in a bucket named like the broker's buckets.
type Record struct {
	Bucket string
	Key    []byte
	Value  []byte
}

// Bucket names, as in the broker's store.
const (
	bucketInbound = "in"
	bucketMsgs    = "msgs"
	bucketQueue   = "queue"
	bucketOwners  = "owners"
)

// subscribersPerMessage is the fan-out of one message.
const subscribersPerMessage = 2

// payload is the body every message carries: 100 bytes, like a small sensor reading.
var payload = make([]byte, 100)

// newBatch builds the batch that the writer owner submits as its n-th message. Its id is unique
// across writers, so that read-back can tell which batches are present.
func newBatch(writer int, n uint32, epoch uint64) *Batch {
	owner := fmt.Sprintf("pub-%04d", writer)
	id := uint64(writer)<<32 | uint64(n)
	idKey := binary.BigEndian.AppendUint64(nil, id)
	packetID := uint16(n%65535) + 1

	inKey := binary.BigEndian.AppendUint16([]byte(owner+"/"), packetID)
	inValue := append([]byte{1, 0x00}, idKey...) // format byte, PUBREC reason code, message ref

	topic := "sensors/" + owner + "/temperature"
	msg := []byte{1, 2} // format byte, QoS
	msg = binary.BigEndian.AppendUint16(msg, uint16(len(topic)))
	msg = append(msg, topic...)
	msg = append(msg, payload...)

	records := []Record{
		{Bucket: bucketInbound, Key: inKey, Value: inValue},
		{Bucket: bucketMsgs, Key: idKey, Value: msg},
	}
	for s := range subscribersPerMessage {
		qKey := append([]byte(fmt.Sprintf("sub-%04d/", s)), idKey...)
		records = append(records, Record{Bucket: bucketQueue, Key: qKey, Value: append([]byte{1, 2}, idKey...)})
	}
	return &Batch{ID: id, Owner: owner, Epoch: epoch, Records: records}
}

// batchID reads the batch id back from a key of the msgs bucket.
func batchID(msgKey []byte) (uint64, error) {
	if len(msgKey) != 8 {
		return 0, fmt.Errorf("message key of %d bytes, want 8", len(msgKey))
	}
	return binary.BigEndian.Uint64(msgKey), nil
}

// Command kinds in the replicated log of the raft engine.
const (
	cmdBatch byte = 1
	cmdClaim byte = 2
)

// encode writes a batch (or, with kind cmdClaim and no records, an ownership claim) as a log entry.
func (b *Batch) encode(kind byte) []byte {
	out := []byte{kind}
	out = binary.BigEndian.AppendUint64(out, b.ID)
	out = binary.BigEndian.AppendUint64(out, b.Epoch)
	out = appendBytes(out, []byte(b.Owner))
	out = binary.BigEndian.AppendUint16(out, uint16(len(b.Records)))
	for _, r := range b.Records {
		out = appendBytes(out, []byte(r.Bucket))
		out = appendBytes(out, r.Key)
		out = appendBytes(out, r.Value)
	}
	return out
}

func appendBytes(out, b []byte) []byte {
	out = binary.BigEndian.AppendUint32(out, uint32(len(b)))
	return append(out, b...)
}

var errShortEntry = errors.New("short log entry")

// decodeBatch reads a log entry written by encode.
func decodeBatch(in []byte) (kind byte, b *Batch, err error) {
	if len(in) < 19 {
		return 0, nil, errShortEntry
	}
	kind = in[0]
	b = &Batch{ID: binary.BigEndian.Uint64(in[1:]), Epoch: binary.BigEndian.Uint64(in[9:])}
	rest := in[17:]
	owner, rest, err := readBytes(rest)
	if err != nil {
		return 0, nil, err
	}
	b.Owner = string(owner)
	if len(rest) < 2 {
		return 0, nil, errShortEntry
	}
	n := int(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	for range n {
		var bucket, key, value []byte
		if bucket, rest, err = readBytes(rest); err != nil {
			return 0, nil, err
		}
		if key, rest, err = readBytes(rest); err != nil {
			return 0, nil, err
		}
		if value, rest, err = readBytes(rest); err != nil {
			return 0, nil, err
		}
		b.Records = append(b.Records, Record{Bucket: string(bucket), Key: key, Value: value})
	}
	return kind, b, nil
}

func readBytes(in []byte) (b, rest []byte, err error) {
	if len(in) < 4 {
		return nil, nil, errShortEntry
	}
	n := int(binary.BigEndian.Uint32(in))
	if len(in) < 4+n {
		return nil, nil, errShortEntry
	}
	return in[4 : 4+n], in[4+n:], nil
}
