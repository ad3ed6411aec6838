package session

// mayRead asks Options.MayRead whether s may receive a message published on topic; a refusal is
// counted in Metrics.NotAuthorized. Rights are checked at every delivery, not only at SUBSCRIBE, so
// that a subscription granted earlier does not outlive a change of rights. Caller holds b.mu.
func (b *Broker) mayRead(s *Session, topic string) bool {
	if b.opts.MayRead == nil || b.opts.MayRead(s.ClientID, s.Username, topic) {
		return true
	}
	b.Metrics.NotAuthorized.Add(1)
	return false
}
