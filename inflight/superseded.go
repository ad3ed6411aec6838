package inflight

import "encoding/binary"

// A checkpoint applies a log segment's batches to bbolt in one transaction, so only the state at
// its end is ever seen. Most QoS 2 records live for less than one segment: an inbound entry is put
// at PUBLISH and deleted at PUBREL, a message and its outbound entry are put and deleted within
// milliseconds. Writing each of those puts into bbolt only to delete it in the same transaction
// was the largest part of a checkpoint's cost (bbolt puts materialise and split pages). A change
// whose key a later change of the same segment puts or deletes again is skipped: the last change
// of a key alone decides its final state, as the only other changes, DeleteSession's range
// deletes, are always applied (a put before one is applied, then removed by it, as before).

// superseded reports, for every change of batches in order (flattened), whether a later change in
// batches writes or deletes the same key, so that applying it changes nothing at the end. Only the
// last change of a key is kept, so the records that stay are written once per checkpoint.
func superseded(batches []*Batch) []bool {
	n := 0
	for _, b := range batches {
		n += len(b.ops)
	}
	skip := make([]bool, n)
	later := make(map[string]struct{}, n/2)
	var key []byte // reused: a lookup with string(key) does not allocate, only an insertion does
	i := n
	for bi := len(batches) - 1; bi >= 0; bi-- {
		ops := batches[bi].ops
		for k := len(ops) - 1; k >= 0; k-- {
			i--
			var ok bool
			if key, ok = ops[k].appendTarget(key[:0]); !ok {
				continue
			}
			if _, seen := later[string(key)]; seen {
				skip[i] = true
				continue
			}
			later[string(key)] = struct{}{}
		}
	}
	return skip
}

// appendTarget appends to k the one record a point change writes or deletes, named by a letter for
// its bucket and its key in that bucket; ok is false for DeleteSession, which deletes a range. A
// message's body and its index record are one target: they are always put and deleted together.
func (o *op) appendTarget(k []byte) (_ []byte, ok bool) {
	client := func(letter byte, clientID string) []byte {
		k = append(k, letter)
		k = append(k, clientID...)
		return append(k, 0)
	}
	switch o.kind {
	case opPutSession:
		return client('s', o.clientID), true
	case opPutSubscription:
		return append(client('b', o.clientID), o.sub.Filter...), true
	case opDeleteSubscription:
		return append(client('b', o.clientID), o.filter...), true
	case opPutInbound, opDeleteInbound:
		return binary.BigEndian.AppendUint16(client('i', o.clientID), o.packetID), true
	case opPutOutbound:
		return binary.BigEndian.AppendUint16(client('o', o.clientID), o.out.PacketID), true
	case opDeleteOutbound:
		return binary.BigEndian.AppendUint16(client('o', o.clientID), o.packetID), true
	case opPutQueued:
		return binary.BigEndian.AppendUint64(client('q', o.clientID), o.queued.Order), true
	case opDeleteQueued:
		return binary.BigEndian.AppendUint64(client('q', o.clientID), o.order), true
	case opPutMessage, opDeleteMessage:
		return binary.BigEndian.AppendUint64(append(k, 'm'), o.seq), true
	case opPutRetained, opDeleteRetained:
		return append(append(k, 'r'), o.topic...), true
	case opPutDedup:
		return append(append(k, 'd'), o.dedup.Key...), true
	case opDeleteDedup:
		return append(append(k, 'd'), o.topic...), true
	case opPutShared, opDeleteShared:
		r := o.shared
		k = append(append(append(k, 'g'), r.Group...), 0)
		k = append(append(k, r.Filter...), 0)
		return binary.BigEndian.AppendUint64(k, r.Order), true
	}
	return k, false
}
