package inflight

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Every value of a format 2 file ends with a CRC-32C (Castagnoli) of the bucket name, the key and
// the value before it. bbolt checks the checksum of its meta pages only: a bit flipped in a data
// page (a bad sector, a torn write the drive did not report, a stray write) is read back as it is,
// and would be delivered as a message. The checksum makes such a record detectable when it is read.
//
// The bucket name is part of the sum because the buckets in and out have keys of the same shape
// (client id, 0x00, packet id) and values of similar length: a page of one that ended up in the
// other, or a record written under the wrong bucket, must not pass. A NUL (which no bucket name
// holds) separates the name from the key; bbolt stores the key's length, so key and value need no
// separator.

// checksumSize is the length of the checksum at the end of a format 2 value.
const checksumSize = 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errChecksum is the cause of a value whose checksum does not match.
var errChecksum = errors.New("checksum mismatch")

func checksum(bucket, key, value []byte) uint32 {
	c := crc32.Update(0, castagnoli, bucket)
	c = crc32.Update(c, castagnoli, []byte{0})
	c = crc32.Update(c, castagnoli, key)
	return crc32.Update(c, castagnoli, value)
}

// seal appends the checksum of bucket, key and value to value, which it may extend in place.
func seal(bucket, key, value []byte) []byte {
	return binary.BigEndian.AppendUint32(value, checksum(bucket, key, value))
}

// unseal checks the checksum at the end of a stored value and returns the value without it. The
// result aliases stored.
func unseal(bucket, key, stored []byte) ([]byte, error) {
	if len(stored) < 1+checksumSize {
		return nil, fmt.Errorf("value is %d bytes, too short to hold its checksum", len(stored))
	}
	n := len(stored) - checksumSize
	want := binary.BigEndian.Uint32(stored[n:])
	if got := checksum(bucket, key, stored[:n]); got != want {
		return nil, fmt.Errorf("%w (stored %08x, computed %08x)", errChecksum, want, got)
	}
	return stored[:n], nil
}
