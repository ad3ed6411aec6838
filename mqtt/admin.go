package mqtt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/oncemq/oncemq/session"
)

// ErrNoSession is returned by DeleteSession for a client id the broker holds no session of.
var ErrNoSession = errors.New("mqtt: no such session")

// SessionInfo is what an operator sees of one session. The JSON names are those of oncemq's admin
// API.
type SessionInfo struct {
	ClientID string `json:"client_id"`
	// Username is the identity the latest connection authenticated as; "" after a restart until
	// the client connects again (it is not stored).
	Username       string `json:"username"`
	Online         bool   `json:"online"`
	ExpiryInterval uint32 `json:"expiry_interval"` // seconds; 4294967295 never expires
	// ExpiresAt is when an offline session with a finite expiry ends; nil while online or never.
	ExpiresAt     *time.Time     `json:"expires_at,omitempty"`
	Subscriptions []Subscription `json:"subscriptions"`
	// InboundAwaitingPubrel are the QoS 2 packet ids the client sent and the broker answered with
	// PUBREC, awaiting the client's PUBREL.
	InboundAwaitingPubrel []uint16 `json:"inbound_awaiting_pubrel"`
	// OutboundInFlight are the deliveries to the client awaiting its acknowledgement, in order.
	OutboundInFlight []OutboundInFlight `json:"outbound_in_flight"`
	Queued           int                `json:"queued"`       // messages waiting for the client
	QueuedBytes      int                `json:"queued_bytes"` // their payloads
}

// Subscription is one subscription of a session.
type Subscription struct {
	Filter            string `json:"filter"`
	QoS               byte   `json:"qos"`
	NoLocal           bool   `json:"no_local,omitempty"`
	RetainAsPublished bool   `json:"retain_as_published,omitempty"`
	RetainHandling    byte   `json:"retain_handling,omitempty"`
	Identifier        int    `json:"subscription_identifier,omitempty"`
}

// OutboundInFlight is one delivery to a client that is not acknowledged yet.
type OutboundInFlight struct {
	PacketID uint16 `json:"packet_id"`
	QoS      byte   `json:"qos"`
	// State is "publish-sent" (awaiting PUBACK or PUBREC) or "pubrel-sent" (QoS 2, awaiting
	// PUBCOMP).
	State string `json:"state"`
}

// Sessions lists every session the broker holds, in client id order. It copies them under the
// broker's lock: it is for an operator's request, not for every message.
func (s *Server) Sessions() []SessionInfo {
	eng, err := s.engine()
	if err != nil {
		return nil
	}
	infos := eng.broker.Sessions()
	out := make([]SessionInfo, len(infos))
	for i := range infos {
		out[i] = sessionInfo(&infos[i])
	}
	return out
}

// Session is the session of clientID; false if the broker holds none.
func (s *Server) Session(clientID string) (SessionInfo, bool) {
	eng, err := s.engine()
	if err != nil {
		return SessionInfo{}, false
	}
	in, ok := eng.broker.SessionInfo(clientID)
	if !ok {
		return SessionInfo{}, false
	}
	return sessionInfo(&in), true
}

// DeleteSession ends the session of clientID as an operator asks: its connection, if any, is closed
// (5.0: DISCONNECT 0x98, Administrative action), its will is published, and the session is removed
// with its subscriptions, in-flight ids and queue. It returns once the removal is committed, so
// the client's next CONNECT gets Session Present 0 even after a crash; ErrNoSession if there is
// no such session.
func (s *Server) DeleteSession(ctx context.Context, clientID string) error {
	eng, err := s.engine()
	if err != nil {
		return fmt.Errorf("delete session %q: %w", clientID, err)
	}
	done := make(chan error, 1)
	if !eng.broker.Delete(clientID, func(err error) { done <- err }) {
		return ErrNoSession
	}
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("delete session %q: %w", clientID, err)
		}
		s.log.Info("session deleted by an operator", "client", clientID)
		return nil
	case <-ctx.Done():
		return fmt.Errorf("delete session %q: waiting for the commit: %w", clientID, ctx.Err())
	}
}

// Backup writes a consistent copy of the state file to w while the broker runs: the state as of
// the last commit before the call, so every message acknowledged before Backup was called is in
// it. Restoring is starting a broker with the copy as DataFile in its DataDir.
func (s *Server) Backup(w io.Writer) (int64, error) {
	eng, err := s.engine()
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	return eng.journal.WriteTo(w)
}

// StoreErr is nil while the state file accepts commits, and why it does not otherwise: it failed,
// is being reopened after the disk filled (see Readiness), or failed for good.
func (s *Server) StoreErr() error {
	_, err := s.engine()
	return err
}

func sessionInfo(in *session.Info) SessionInfo {
	out := SessionInfo{
		ClientID: in.ClientID, Username: in.Username, Online: in.Online, ExpiryInterval: in.ExpiryInterval,
		Subscriptions: make([]Subscription, 0, len(in.Subscriptions)), InboundAwaitingPubrel: in.Inbound,
		OutboundInFlight: make([]OutboundInFlight, 0, len(in.Outbound)), Queued: in.Queued, QueuedBytes: in.QueuedBytes,
	}
	if out.InboundAwaitingPubrel == nil {
		out.InboundAwaitingPubrel = []uint16{}
	}
	if !in.Online && in.ExpiryInterval != session.NeverExpire && in.DisconnectedAt > 0 {
		at := time.Unix(0, in.DisconnectedAt).Add(time.Duration(in.ExpiryInterval) * time.Second).UTC()
		out.ExpiresAt = &at
	}
	for _, sub := range in.Subscriptions {
		out.Subscriptions = append(out.Subscriptions, Subscription{Filter: sub.Filter, QoS: sub.QoS, NoLocal: sub.NoLocal,
			RetainAsPublished: sub.RetainAsPublished, RetainHandling: sub.RetainHandling, Identifier: sub.Identifier})
	}
	for _, o := range in.Outbound {
		out.OutboundInFlight = append(out.OutboundInFlight, OutboundInFlight{PacketID: o.PacketID, QoS: o.QoS, State: o.State.String()})
	}
	return out
}
