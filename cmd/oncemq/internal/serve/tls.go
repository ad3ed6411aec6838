package serve

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// certStore holds the TLS settings of the TLS and WebSocket-over-TLS listeners: the server's
// certificate and, for mutual TLS, the CAs that sign client certificates. reload reads the files
// again and swaps them in at once; handshakes under way and connections already open keep what
// they started with, so a reload drops no one.
type certStore struct {
	cert, key, clientCA string
	current             atomic.Pointer[tls.Config]
}

// newCertStore loads the files of cfg; nil without a certificate. An error names the setting and
// where it was given.
func newCertStore(cfg config) (*certStore, error) {
	if cfg.TLSCert == "" {
		return nil, nil
	}
	s := &certStore{cert: cfg.TLSCert, key: cfg.TLSKey, clientCA: cfg.TLSClientCA}
	tc, err := s.load()
	if err != nil {
		return nil, fmt.Errorf("%v (tls-cert given by %s)", err, cfg.origin["tls-cert"])
	}
	s.current.Store(tc)
	return s, nil
}

// load reads the files into the configuration of one handshake: TLS 1.2 at least, and client
// certificates required and verified when a client CA is set.
func (s *certStore) load() (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(s.cert, s.key)
	if err != nil {
		return nil, fmt.Errorf("load certificate %s and key %s: %w", s.cert, s.key, err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if s.clientCA != "" {
		pem, err := os.ReadFile(s.clientCA)
		if err != nil {
			return nil, fmt.Errorf("load client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("load client CA %s: no PEM certificate in it", s.clientCA)
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return tc, nil
}

// reload reads the files again; on an error the previous certificates stay in use.
func (s *certStore) reload() error {
	tc, err := s.load()
	if err != nil {
		return fmt.Errorf("TLS certificates not reloaded, the previous ones stay in use: %w", err)
	}
	s.current.Store(tc)
	return nil
}

// serverConfig is the tls.Config of the listeners: each handshake takes the current settings.
func (s *certStore) serverConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			tc := s.current.Load()
			if tc == nil {
				return nil, errors.New("no certificate loaded")
			}
			return tc, nil
		},
	}
}
