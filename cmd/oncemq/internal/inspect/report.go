package inspect

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/oncemq/oncemq/inflight"
)

// Report is what inspect prints; its JSON form is --json's output. The session fields are those
// of the running broker's /admin/sessions, where the file has them.
type Report struct {
	Sessions        []Session `json:"sessions"`
	Retained        int       `json:"retained"`
	FileSize        int64     `json:"file_size"`
	PageSize        int       `json:"page_size"`
	FreePages       int       `json:"free_pages"`
	LogBytes        int64     `json:"log_bytes"`        // the store's log, oncemq.wal
	LogRecords      int       `json:"log_records"`      // its records the file does not have yet (included above)
	ExpiredSessions []string  `json:"expired_sessions"` // the next start removes them
	BrokenEntries   int       `json:"broken_entries"`   // the next start removes them
	OrphanMessages  int       `json:"orphan_messages"`  // the next start removes them
	SharedGroups    []Group   `json:"shared_groups"`    // queues of shared subscription groups
	// Damaged lists the records that fail their checksum or cannot be decoded, and those that
	// depend on them ("depends on damage: ..."): a broker refuses to start on them, and `oncemq
	// repair` writes a file without them.
	Damaged []string `json:"damaged"`
}

// Group is one shared subscription group's queue: messages waiting for a member, and messages sent
// to a member and not yet completed.
type Group struct {
	Filter  string `json:"filter"` // $share/{group}/{filter}
	Waiting int    `json:"waiting"`
	Sent    int    `json:"sent"`
}

// Session is one stored session. Its username is the owner the file records (null for a session
// stored before owners existed); Online is not in the file: a stopped broker has no connection.
type Session struct {
	ClientID        string     `json:"client_id"`
	Username        *string    `json:"username"` // the owner; null: not recorded
	Online          *bool      `json:"online"`   // always null: n/a offline
	ProtocolVersion byte       `json:"protocol_version"`
	ExpiryInterval  uint32     `json:"expiry_interval"`           // seconds; 4294967295 never
	DisconnectedAt  *time.Time `json:"disconnected_at,omitempty"` // absent: connected when the broker stopped
	Subscriptions   []string   `json:"subscriptions"`             // "filter qos=N"
	InboundAwaiting []uint16   `json:"inbound_awaiting_pubrel"`
	Outbound        []Outbound `json:"outbound_in_flight"`
	Queued          int        `json:"queued"`
	QueuedBytes     int        `json:"queued_bytes"`
	HasWill         bool       `json:"has_will"`
}

// Outbound is one outbound packet id in flight.
type Outbound struct {
	PacketID uint16 `json:"packet_id"`
	State    string `json:"state"` // publish-sent or pubrel-sent
	QoS      byte   `json:"qos"`
}

func newReport(in *inflight.Inspection, client string) Report {
	r := Report{Retained: in.Retained, FileSize: in.FileSize, PageSize: in.PageSize, FreePages: in.FreePages,
		LogBytes: in.LogBytes, LogRecords: in.LogRecords,
		ExpiredSessions: in.ExpiredSessions, BrokenEntries: in.BrokenEntries, OrphanMessages: in.Orphans,
		Sessions: []Session{}, SharedGroups: []Group{}, Damaged: []string{}}
	for _, d := range in.Damage {
		line := d.String()
		if d.Dependent {
			line = "depends on damage: " + line
		}
		r.Damaged = append(r.Damaged, line)
	}
	for _, g := range in.Shared {
		r.SharedGroups = append(r.SharedGroups, Group{Filter: "$share/" + g.Group + "/" + g.Filter, Waiting: g.Waiting, Sent: g.Sent})
	}
	for _, s := range in.Sessions {
		if client != "" && s.Record.ClientID != client {
			continue
		}
		r.Sessions = append(r.Sessions, sessionOf(s))
	}
	return r
}

func sessionOf(s inflight.InspectedSession) Session {
	out := Session{ClientID: s.Record.ClientID, ProtocolVersion: s.Record.ProtocolVersion,
		ExpiryInterval: s.Record.ExpiryInterval, Queued: len(s.Queue), QueuedBytes: s.QueuedBytes,
		HasWill: s.Record.Will != nil, Subscriptions: []string{}, InboundAwaiting: []uint16{}, Outbound: []Outbound{},
		Username: s.Record.Owner}
	if at := s.Record.DisconnectedAt; at != 0 {
		t := time.Unix(0, at).UTC()
		out.DisconnectedAt = &t
	}
	for _, sub := range s.Subscriptions {
		out.Subscriptions = append(out.Subscriptions, fmt.Sprintf("%s qos=%d", sub.Filter, sub.QoS))
	}
	for _, in := range s.Inbound {
		out.InboundAwaiting = append(out.InboundAwaiting, in.PacketID)
	}
	for _, o := range s.Outbound {
		out.Outbound = append(out.Outbound, Outbound{PacketID: o.PacketID, State: o.State.String(), QoS: o.QoS})
	}
	return out
}

// writeText prints the report for a terminal: one block per session, then the file.
func (r Report) writeText(w io.Writer) {
	for _, s := range r.Sessions {
		fmt.Fprintf(w, "session %q\n", s.ClientID)
		owner := "n/a (not recorded)"
		if s.Username != nil {
			owner = fmt.Sprintf("%q", *s.Username)
		}
		fmt.Fprintf(w, "  username:        %s\n  online:          n/a (broker stopped)\n", owner)
		fmt.Fprintf(w, "  protocol:        %s\n", protocolName(s.ProtocolVersion))
		fmt.Fprintf(w, "  expiry:          %s\n", expiryText(s))
		fmt.Fprintf(w, "  subscriptions:   %s\n", listText(s.Subscriptions))
		ids := make([]string, len(s.InboundAwaiting))
		for i, id := range s.InboundAwaiting {
			ids[i] = fmt.Sprint(id)
		}
		fmt.Fprintf(w, "  inbound awaiting PUBREL: %s\n", listText(ids))
		outs := make([]string, len(s.Outbound))
		for i, o := range s.Outbound {
			outs[i] = fmt.Sprintf("%d %s qos=%d", o.PacketID, o.State, o.QoS)
		}
		fmt.Fprintf(w, "  outbound in flight:      %s\n", listText(outs))
		fmt.Fprintf(w, "  queued:          %d messages, %d bytes\n", s.Queued, s.QueuedBytes)
	}
	for _, g := range r.SharedGroups {
		fmt.Fprintf(w, "shared group %q: %d waiting, %d sent to a member\n", g.Filter, g.Waiting, g.Sent)
	}
	fmt.Fprintf(w, "sessions: %d\nretained messages: %d\n", len(r.Sessions), r.Retained)
	fmt.Fprintf(w, "file: %d bytes, %d pages of %d bytes free\n", r.FileSize, r.FreePages, r.PageSize)
	fmt.Fprintf(w, "log: %d bytes, %d records not yet in the file (counted above)\n", r.LogBytes, r.LogRecords)
	if len(r.ExpiredSessions)+r.BrokenEntries+r.OrphanMessages > 0 {
		fmt.Fprintf(w, "the next start removes: expired sessions %s, %d broken entries, %d orphan messages\n",
			listText(r.ExpiredSessions), r.BrokenEntries, r.OrphanMessages)
	}
	if len(r.Damaged) > 0 {
		fmt.Fprintf(w, "DAMAGED: %d records; a broker refuses to start on this file (oncemq repair writes one without them):\n", len(r.Damaged))
		for _, line := range r.Damaged {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
}

func protocolName(v byte) string {
	if v == 5 {
		return "5.0"
	}
	return "3.1.1"
}

func expiryText(s Session) string {
	interval := fmt.Sprintf("%ds", s.ExpiryInterval)
	if s.ExpiryInterval == 0xFFFFFFFF {
		interval = "never"
	}
	if s.DisconnectedAt == nil {
		return interval + " after disconnect (connected when the broker stopped)"
	}
	return fmt.Sprintf("%s after disconnect at %s", interval, s.DisconnectedAt.Format(time.RFC3339))
}

func listText(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	return strings.Join(items, ", ")
}
