package auth

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/oncemq/oncemq/mqtt"
)

// AuthenticatorOptions configures an Authenticator. Zero values mean defaults.
type AuthenticatorOptions struct {
	// Passwords checks the clients that send a username; nil: no password file, so a username
	// cannot be checked and is refused (0x86), unless TLSIdentityAsUsername names the client.
	Passwords *Passwords
	// AllowAnonymous accepts clients that send neither username nor password (as username ""); the
	// ACL's rules outside any user block apply to them. Otherwise they get 0x87 (3.1.1: 0x05).
	AllowAnonymous bool
	// TLSIdentityAsUsername makes the Common Name of the client's verified certificate (mutual TLS)
	// its username, without a password. A client without a verified certificate is refused.
	TLSIdentityAsUsername bool
	// Logger receives a line per failed login, with the remote address; default slog.Default().
	Logger *slog.Logger

	// FailureDelay is the wait before the CONNACK of the first failed login from an address,
	// doubled at each failure in a row up to MaxFailureDelay; defaults 250ms and 8s. The wait ends
	// early at the connect timeout.
	FailureDelay, MaxFailureDelay time.Duration
	// FailureMemory is how long an address's failures are remembered after its last one (default
	// 10 minutes); a success forgets them at once. At most MaxTrackedAddresses (default 10000)
	// addresses are remembered.
	FailureMemory       time.Duration
	MaxTrackedAddresses int
}

// Authenticator is an mqtt.Authenticator over a password file, client certificates and the
// anonymous policy. Unknown users and wrong passwords get the same answer, Bad User Name or
// Password (3.1.1: 0x04), after the same work; clients without credentials where anonymous access
// is off get Not authorized (3.1.1: 0x05). Each failure is logged with the remote address and
// answered after a delay that grows with the failures in a row from that address.
type Authenticator struct {
	opts      AuthenticatorOptions
	passwords atomic.Pointer[Passwords]
	throttle  *throttle
}

var _ mqtt.Authenticator = (*Authenticator)(nil)

// NewAuthenticator returns an Authenticator with opts.
func NewAuthenticator(opts AuthenticatorOptions) *Authenticator {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.FailureDelay <= 0 {
		opts.FailureDelay = 250 * time.Millisecond
	}
	if opts.MaxFailureDelay <= 0 {
		opts.MaxFailureDelay = 8 * time.Second
	}
	if opts.FailureMemory <= 0 {
		opts.FailureMemory = 10 * time.Minute
	}
	if opts.MaxTrackedAddresses <= 0 {
		opts.MaxTrackedAddresses = 10000
	}
	a := &Authenticator{opts: opts,
		throttle: newThrottle(opts.FailureDelay, opts.MaxFailureDelay, opts.FailureMemory, opts.MaxTrackedAddresses)}
	a.passwords.Store(opts.Passwords)
	return a
}

// SetPasswords replaces the password file for the CONNECTs that follow; connected clients stay.
func (a *Authenticator) SetPasswords(p *Passwords) { a.passwords.Store(p) }

// Authenticate implements mqtt.Authenticator.
func (a *Authenticator) Authenticate(ctx context.Context, req *mqtt.ConnectRequest) (string, error) {
	user, refusal, why := a.decide(req)
	if refusal == nil {
		a.throttle.succeed(req.RemoteAddr)
		return user, nil
	}
	a.opts.Logger.Warn("login failed", slog.String("remote", addrString(req)), slog.String("client", req.ID),
		slog.String("username", req.Username), slog.String("why", why))
	a.throttle.fail(ctx, req.RemoteAddr)
	return "", refusal
}

// decide checks req: the username on success, or the refusal and why, for the log.
func (a *Authenticator) decide(req *mqtt.ConnectRequest) (string, error, string) {
	if a.opts.TLSIdentityAsUsername {
		if req.TLS == nil || len(req.TLS.VerifiedChains) == 0 || len(req.TLS.VerifiedChains[0]) == 0 {
			return "", mqtt.ErrNotAuthorized, "no verified client certificate"
		}
		cn := req.TLS.VerifiedChains[0][0].Subject.CommonName
		if cn == "" {
			return "", mqtt.ErrNotAuthorized, "client certificate has no Common Name"
		}
		return cn, nil, ""
	}
	if req.Username == "" && req.Password == nil {
		if a.opts.AllowAnonymous {
			return "", nil, ""
		}
		return "", mqtt.ErrNotAuthorized, "no credentials and anonymous access is off"
	}
	p := a.passwords.Load()
	if p == nil {
		return "", mqtt.ErrBadUsernameOrPassword, "no password file to check the username against"
	}
	known, err := p.Check(req.Username, req.Password)
	switch {
	case err == nil:
		return req.Username, nil, ""
	case !known:
		return "", mqtt.ErrBadUsernameOrPassword, "unknown user"
	case errors.Is(err, ErrBadPassword):
		return "", mqtt.ErrBadUsernameOrPassword, "wrong password"
	}
	return "", err, err.Error()
}

func addrString(req *mqtt.ConnectRequest) string {
	if req.RemoteAddr == nil {
		return ""
	}
	return req.RemoteAddr.String()
}
