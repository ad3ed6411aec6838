package inflight

import "container/list"

// DefaultMessageCache is the default size of the body cache, in bytes: the bodies of some 30,000
// messages of 1 KiB, or 60 of 512 KiB, that a session reconnecting soon after they were published
// gets without reading the file. Not more: Go's collector lets the heap grow well past what is
// live (oncemq serve runs GOGC=400 under a soft limit of three times the live heap), so a full
// cache of C bytes can cost 2C to 3C of resident memory, and an idle broker holding 1,500 x 512 KiB
// queued messages must stay under 128 MiB (with 64 MiB it measured 119 and 144 MiB, with 32 MiB
// 91 and 100). A bigger cache saves reads only for sessions that reconnect later, and each of
// those reads its bodies once anyway.
const DefaultMessageCache = 32 << 20

// cacheOverhead is what a cached body costs besides its topic and payload: the Message, its list
// element and its map entry, roughly.
const cacheOverhead = 512

// bodyCache is a least-recently-used cache of message bodies bounded by bytes. It is ours, not a
// library's: the well-kept Go LRU caches bound the number of entries, not their bytes, and the
// cost-based ones admit entries asynchronously or by frequency, so a body just written could be
// missing when its session reconnects; this one is a list and a map. Not safe for concurrent use:
// bodies guards it.
type bodyCache struct {
	limit, used int64
	lru         list.List // of *cached, most recently used first
	bySeq       map[uint64]*list.Element
}

type cached struct {
	seq  uint64
	msg  *Message
	cost int64
}

func newBodyCache(limit int64) *bodyCache {
	return &bodyCache{limit: limit, bySeq: make(map[uint64]*list.Element)}
}

func (c *bodyCache) get(seq uint64) *Message {
	e, ok := c.bySeq[seq]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(e)
	return e.Value.(*cached).msg
}

// put adds m under seq, evicting the least recently used bodies past the limit. A body larger than
// the whole cache is not kept.
func (c *bodyCache) put(seq uint64, m *Message) {
	cost := int64(len(m.Payload)+len(m.Topic)) + cacheOverhead
	if cost > c.limit {
		c.remove(seq)
		return
	}
	if e, ok := c.bySeq[seq]; ok {
		c.used += cost - e.Value.(*cached).cost
		e.Value = &cached{seq: seq, msg: m, cost: cost}
		c.lru.MoveToFront(e)
	} else {
		c.bySeq[seq] = c.lru.PushFront(&cached{seq: seq, msg: m, cost: cost})
		c.used += cost
	}
	for c.used > c.limit {
		c.remove(c.lru.Back().Value.(*cached).seq)
	}
}

func (c *bodyCache) remove(seq uint64) {
	e, ok := c.bySeq[seq]
	if !ok {
		return
	}
	c.lru.Remove(e)
	delete(c.bySeq, seq)
	c.used -= e.Value.(*cached).cost
}
