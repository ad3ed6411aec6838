package inflight

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// Damage is one record of a data file that cannot be trusted, or one intact record that depends on
// such a record and goes with it. What the record belonged to is read from its key: a damaged value
// names nothing, and the key is what the rest of the file refers to.
type Damage struct {
	Bucket   string
	Key      []byte
	ClientID string // the session it belongs to, "" when the key names none
	PacketID uint16 // in, out
	Order    uint64 // queue
	Seq      uint64 // msgs: its key; out, queue: the message it refers to
	Topic    string // retained, or a dedup id of topic scope
	Problem  string // what is wrong with it

	// Dependent is set on an intact record that refers to a damaged or missing one: an entry
	// whose message or session record is damaged. Repair gives it up with what it refers to.
	Dependent bool

	// unplaced is set on a record that failed its checksum or is out of key order: its key may be
	// damaged and equal an intact record's, or a damaged page may show one record twice, so a copy
	// leaves out such records by the same rules instead of by key.
	unplaced bool
}

// String is one line: where the record is, what it belonged to, and what is wrong.
func (d Damage) String() string {
	var who []string
	if d.ClientID != "" {
		who = append(who, fmt.Sprintf("client %q", d.ClientID))
	}
	if d.PacketID != 0 {
		who = append(who, fmt.Sprintf("packet id %d", d.PacketID))
	}
	if d.Order != 0 {
		who = append(who, fmt.Sprintf("queue order %d", d.Order))
	}
	if d.Seq != 0 {
		who = append(who, fmt.Sprintf("message %d", d.Seq))
	}
	if d.Topic != "" {
		who = append(who, fmt.Sprintf("topic %q", d.Topic))
	}
	s := fmt.Sprintf("bucket %s key %q", d.Bucket, abbreviate(d.Key))
	if d.Key == nil {
		s = fmt.Sprintf("bucket %q", d.Bucket) // the bucket itself: missing, or a name no release writes
	}
	if len(who) > 0 {
		s += " (" + strings.Join(who, ", ") + ")"
	}
	return s + ": " + d.Problem
}

// describe fills what a record belonged to from its bucket and key, as far as the key says.
func describe(bucket string, key []byte, problem string) Damage {
	d := Damage{Bucket: bucket, Key: append([]byte(nil), key...), Problem: problem}
	switch bucket {
	case "sessions":
		d.ClientID = string(key)
	case "subs", "in", "out", "queue":
		clientID, suffix, ok := splitKey(key)
		if !ok {
			break
		}
		d.ClientID = clientID
		switch {
		case (bucket == "in" || bucket == "out") && len(suffix) == 2:
			d.PacketID = binary.BigEndian.Uint16(suffix)
		case bucket == "queue" && len(suffix) == 8:
			d.Order = binary.BigEndian.Uint64(suffix)
		}
	case "msgs", "msgidx":
		if len(key) == 8 {
			d.Seq = binary.BigEndian.Uint64(key)
		}
	case "retained":
		d.Topic = string(key)
	case "dedup":
		if scope, name, _, ok := SplitDedupKey(string(key)); ok {
			if scope == DedupScopeTopic {
				d.Topic = name
			} else {
				d.ClientID = name
			}
		}
	}
	return d
}

// maxDamageLines bounds the records a DamageError lists: a file with a damaged page can have
// thousands, and the count says the rest.
const maxDamageLines = 30

// DamageError lists the damaged records of a data file, and the records that depend on them. Open
// returns it wrapped with ErrCorrupt: start-up stops, and `oncemq repair` can write a file without
// them.
type DamageError struct {
	Path    string
	Records []Damage
}

// Damaged counts the damaged records, the dependent ones left out.
func (e *DamageError) Damaged() int {
	n := 0
	for _, d := range e.Records {
		if !d.Dependent {
			n++
		}
	}
	return n
}

func (e *DamageError) Error() string {
	var b strings.Builder
	n := e.Damaged()
	fmt.Fprintf(&b, "%d damaged records", n)
	if dep := len(e.Records) - n; dep > 0 {
		fmt.Fprintf(&b, " and %d records that depend on them", dep)
	}
	if e.Path != "" {
		fmt.Fprintf(&b, " in %s", e.Path)
	}
	b.WriteString(" (`oncemq repair` writes a copy without them and says what it gives up):")
	for i, d := range e.Records {
		if i == maxDamageLines {
			fmt.Fprintf(&b, "\n  ... and %d more", len(e.Records)-i)
			break
		}
		b.WriteString("\n  ")
		if d.Dependent {
			b.WriteString("depends on damage: ")
		}
		b.WriteString(d.String())
	}
	return b.String()
}

// maxKeyShown bounds the bytes of a key a message shows: a damaged key can run on into the bytes
// after it, and a topic can be 64 KiB long.
const maxKeyShown = 80

// abbreviate returns key, cut to maxKeyShown bytes with "..." after it if longer.
func abbreviate(key []byte) string {
	if len(key) <= maxKeyShown {
		return string(key)
	}
	return string(key[:maxKeyShown]) + "..."
}
