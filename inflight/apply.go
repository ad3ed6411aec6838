package inflight

import (
	"bytes"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// ErrInvalidBatch is given to the done callback of a batch that cannot be stored as it is (an empty
// client id, packet id 0, a topic the format cannot hold...). Such a batch is a bug in the caller; it
// is refused alone, before the commit, and the journal goes on.
var ErrInvalidBatch = errors.New("inflight: invalid batch")

// buckets holds the buckets of one write transaction.
type buckets struct {
	sessions, subs, in, out, queue, msgs, msgidx, retained, dedup, shared *bolt.Bucket
}

func txBuckets(tx *bolt.Tx) (buckets, error) {
	bk := buckets{
		sessions: tx.Bucket(bucketSessions),
		subs:     tx.Bucket(bucketSubs),
		in:       tx.Bucket(bucketIn),
		out:      tx.Bucket(bucketOut),
		queue:    tx.Bucket(bucketQueue),
		msgs:     tx.Bucket(bucketMsgs),
		msgidx:   tx.Bucket(bucketMsgIdx),
		retained: tx.Bucket(bucketRetained),
		dedup:    tx.Bucket(bucketDedup),
		shared:   tx.Bucket(bucketShared),
	}
	for _, b := range []*bolt.Bucket{bk.sessions, bk.subs, bk.in, bk.out, bk.queue, bk.msgs, bk.msgidx, bk.retained, bk.dedup, bk.shared} {
		if b == nil {
			return bk, errors.New("bucket missing")
		}
	}
	return bk, nil
}

// validate checks what the format needs of a batch, so that one caller's bug cannot fail the journal
// or write a value that recovery would refuse.
func (b *Batch) validate() error {
	for i := range b.ops {
		if err := b.ops[i].validate(); err != nil {
			return fmt.Errorf("%w: change %d: %w", ErrInvalidBatch, i, err)
		}
	}
	return nil
}

func (o *op) validate() error {
	switch o.kind {
	case opPutSession, opDeleteSession, opPutSubscription, opDeleteSubscription, opPutInbound,
		opDeleteInbound, opPutOutbound, opDeleteOutbound, opPutQueued, opDeleteQueued:
		if !validName(o.clientID) {
			return fmt.Errorf("client id %q", o.clientID)
		}
	}
	switch o.kind {
	case opPutSession:
		if o.session.Will != nil && o.session.Will.Message == nil {
			return errors.New("will without a message")
		}
	case opPutSubscription:
		if !validName(o.sub.Filter) {
			return fmt.Errorf("filter %q", o.sub.Filter)
		}
	case opDeleteSubscription:
		if !validName(o.filter) {
			return fmt.Errorf("filter %q", o.filter)
		}
	case opPutInbound, opDeleteInbound, opDeleteOutbound:
		if o.packetID == 0 {
			return errors.New("packet id 0")
		}
	case opPutOutbound:
		if o.out.PacketID == 0 {
			return errors.New("packet id 0")
		}
		if o.out.State != PublishSent && o.out.State != PubrelSent {
			return fmt.Errorf("outbound state %d", o.out.State)
		}
		if o.out.QoS > 2 {
			return fmt.Errorf("QoS %d", o.out.QoS)
		}
		return validSubIDs(o.out.SubIDs)
	case opPutQueued:
		if o.queued.QoS > 2 {
			return fmt.Errorf("QoS %d", o.queued.QoS)
		}
		return validSubIDs(o.queued.SubIDs)
	case opPutMessage:
		if o.msg.Seq == 0 {
			return errors.New("message without a sequence (Journal.NextSeq)")
		}
		return validMessage(o.msg)
	case opDeleteMessage:
		if o.seq == 0 {
			return errors.New("message sequence 0")
		}
	case opPutRetained:
		return validMessage(o.msg)
	case opDeleteRetained:
		if !validName(o.topic) {
			return fmt.Errorf("topic %q", o.topic)
		}
	case opPutDedup:
		if o.dedup.Reason >= 0x80 {
			return fmt.Errorf("dedup reason 0x%02X: a refused message stays retryable", o.dedup.Reason)
		}
		return validDedupKey(o.dedup.Key)
	case opDeleteDedup:
		return validDedupKey(o.topic)
	case opPutShared, opDeleteShared:
		return o.validateShared()
	}
	return nil
}

func validMessage(m *Message) error {
	if !validName(m.Topic) {
		return fmt.Errorf("topic %q", m.Topic)
	}
	if m.QoS > 2 {
		return fmt.Errorf("QoS %d", m.QoS)
	}
	return nil
}

func validSubIDs(ids []int) error {
	for _, id := range ids {
		if id < 0 || id > maxSubscriptionID {
			return fmt.Errorf("subscription identifier %d", id)
		}
	}
	return nil
}

// apply writes one change into the transaction.
func (bk buckets) apply(o *op) error {
	switch o.kind {
	case opPutSession:
		v, err := encodeJSON(o.session)
		if err != nil {
			return fmt.Errorf("encode session %q: %w", o.clientID, err)
		}
		return put(bk.sessions, bucketSessions, []byte(o.clientID), v)
	case opDeleteSession:
		return bk.deleteSession(o.clientID)
	case opPutSubscription:
		v, err := encodeJSON(o.sub)
		if err != nil {
			return fmt.Errorf("encode subscription %q of %q: %w", o.sub.Filter, o.clientID, err)
		}
		return put(bk.subs, bucketSubs, filterKey(o.clientID, o.sub.Filter), v)
	case opDeleteSubscription:
		return bk.subs.Delete(filterKey(o.clientID, o.filter))
	case opPutInbound:
		return put(bk.in, bucketIn, packetIDKey(o.clientID, o.packetID), encodeInbound(o.reason))
	case opDeleteInbound:
		return bk.in.Delete(packetIDKey(o.clientID, o.packetID))
	case opPutOutbound:
		return put(bk.out, bucketOut, packetIDKey(o.clientID, o.out.PacketID), encodeOutbound(o.out))
	case opDeleteOutbound:
		return bk.out.Delete(packetIDKey(o.clientID, o.packetID))
	case opPutQueued:
		return put(bk.queue, bucketQueue, orderKey(o.clientID, o.queued.Order), encodeQueued(o.queued))
	case opDeleteQueued:
		return bk.queue.Delete(orderKey(o.clientID, o.order))
	case opPutMessage:
		v, err := encodeMessage(o.msg)
		if err != nil {
			return err
		}
		if err := put(bk.msgs, bucketMsgs, seqKey(o.seq), v); err != nil {
			return err
		}
		return put(bk.msgidx, bucketMsgIdx, seqKey(o.seq), encodeIndex(indexOf(o.msg)))
	case opDeleteMessage:
		if err := bk.msgs.Delete(seqKey(o.seq)); err != nil {
			return err
		}
		return bk.msgidx.Delete(seqKey(o.seq))
	case opPutRetained:
		v, err := encodeMessage(o.msg)
		if err != nil {
			return err
		}
		return put(bk.retained, bucketRetained, []byte(o.topic), v)
	case opDeleteRetained:
		return bk.retained.Delete([]byte(o.topic))
	case opPutDedup:
		return put(bk.dedup, bucketDedup, []byte(o.dedup.Key), encodeDedup(o.dedup))
	case opDeleteDedup:
		return bk.dedup.Delete([]byte(o.topic))
	case opPutShared, opDeleteShared:
		return bk.applyShared(o)
	}
	return fmt.Errorf("unknown change kind %d", o.kind)
}

// put writes value under key with its checksum (seal). Every value of every bucket is written
// through it.
func put(b *bolt.Bucket, bucket, key, value []byte) error {
	return b.Put(key, seal(bucket, key, value))
}

// deleteSession removes the session record and every key of the client in subs, in, out and queue.
func (bk buckets) deleteSession(clientID string) error {
	if err := bk.sessions.Delete([]byte(clientID)); err != nil {
		return err
	}
	prefix := clientPrefix(clientID)
	for _, b := range []*bolt.Bucket{bk.subs, bk.in, bk.out, bk.queue} {
		if err := deletePrefix(b, prefix); err != nil {
			return err
		}
	}
	return nil
}

// deletePrefix deletes every key starting with prefix. Keys are collected first: deleting under a
// moving cursor can skip the key after each deleted one.
func deletePrefix(b *bolt.Bucket, prefix []byte) error {
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
