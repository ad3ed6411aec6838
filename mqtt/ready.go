package mqtt

// Readiness says whether the Server can take clients, for a readiness probe such as /readyz. A
// Server that is not ready refuses CONNECTs with Server unavailable (3.1.1: 0x03) and Publish with
// an error; its listeners stay open while a full disk is healed.
type Readiness struct {
	// Recovered: the sessions were rebuilt from the store, at New or after the last heal. False
	// while a store that filled the disk is closed and not yet reopened, and after a fatal failure.
	Recovered bool
	// StoreWritable: the store's commits succeed; false from the first failed commit until the
	// store is reopened.
	StoreWritable bool
	// Serving: at least one listener accepts (Serve runs), and the Server is neither shutting down
	// nor stopped by a failure of its store.
	Serving bool
	// Err is why the store is not usable (the failure being healed, or the one that ended the
	// service); nil while it is.
	Err error
}

// Ready reports whether the Server is recovered, its store writable, and serving.
func (s *Server) Ready() bool {
	r := s.Readiness()
	return r.Recovered && r.StoreWritable && r.Serving
}

// Readiness reports what Ready sums up.
func (s *Server) Readiness() Readiness {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := Readiness{
		Recovered: s.eng != nil,
		Serving:   len(s.listeners) > 0 && !s.shuttingDown.Load() && s.fatal == nil,
	}
	switch {
	case s.fatal != nil:
		r.Err = s.fatal
	case s.eng == nil:
		r.Err = s.healing
	default:
		r.Err = s.eng.journal.Err()
		r.StoreWritable = r.Err == nil
	}
	return r
}
