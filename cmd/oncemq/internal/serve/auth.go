package serve

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/oncemq/oncemq/mqtt"
	"github.com/oncemq/oncemq/mqtt/auth"
)

// reloader re-reads one file on SIGHUP; on error the previous version stays in force.
type reloader struct {
	what   string
	reload func() error
}

// security is what the users-and-access settings give the broker: its hooks, and the reloaders
// SIGHUP runs. Certificate reloads join the same list.
type security struct {
	authenticator mqtt.Authenticator // nil: anyone, with the username as sent
	authorizer    mqtt.Authorizer    // nil: everything allowed
	reloaders     []reloader
}

// newSecurity loads the password and ACL files and decides the anonymous policy. listeners are
// every listener's address; clientCerts says whether client certificates are required.
func newSecurity(cfg config, listeners []string, clientCerts bool, log *slog.Logger) (security, error) {
	var sec security
	policy, err := decideAccess(listeners, cfg.PasswordFile != "", clientCerts, cfg.AllowAnonymous)
	if err != nil {
		return sec, err
	}
	if cfg.TLSIdentityAsUsername && !clientCerts {
		return sec, errors.New("--tls-identity-as-username needs client certificates (--tls-client-ca)")
	}
	var passwords *auth.Passwords
	if cfg.PasswordFile != "" {
		if passwords, err = loadPasswords(cfg.PasswordFile, log); err != nil {
			return sec, err
		}
	}
	if cfg.PasswordFile != "" || cfg.TLSIdentityAsUsername || cfg.ACLFile != "" {
		// With an ACL, a username must be proven: a claimed one would get that user's rules.
		a := auth.NewAuthenticator(auth.AuthenticatorOptions{Passwords: passwords, AllowAnonymous: policy.anonymous,
			TLSIdentityAsUsername: cfg.TLSIdentityAsUsername, Logger: log})
		sec.authenticator = a
		if cfg.PasswordFile != "" {
			sec.reloaders = append(sec.reloaders, reloader{"password file " + cfg.PasswordFile, func() error {
				p, err := loadPasswords(cfg.PasswordFile, log)
				if err == nil {
					a.SetPasswords(p)
				}
				return err
			}})
		}
	}
	if cfg.ACLFile != "" {
		acl, err := auth.LoadACL(cfg.ACLFile)
		if err != nil {
			return sec, err
		}
		az := auth.NewAuthorizer(acl)
		sec.authorizer = az
		sec.reloaders = append(sec.reloaders, reloader{"acl file " + cfg.ACLFile, func() error {
			acl, err := auth.LoadACL(cfg.ACLFile)
			if err == nil {
				az.SetACL(acl)
			}
			return err
		}})
	}
	log.Info("access", "anonymous", policy.anonymous, "password_file", cfg.PasswordFile, "acl_file", cfg.ACLFile,
		"tls_identity_as_username", cfg.TLSIdentityAsUsername)
	return sec, nil
}

// loadPasswords reads the password file and warns about users whose hash is the old, fast $6$.
func loadPasswords(path string, log *slog.Logger) (*auth.Passwords, error) {
	p, err := auth.LoadPasswords(path)
	if err != nil {
		return nil, err
	}
	if weak := p.Weak(); len(weak) > 0 {
		log.Warn("password file has users with the old $6$ hash (one SHA-512, fast to guess); set their "+
			"passwords again with oncemq passwd", "file", path, "users", weak)
	}
	return p, nil
}

// reload runs every reloader, logging each result and then a summary; a failure keeps the
// previous file.
func reload(reloaders []reloader, log *slog.Logger) {
	failed := 0
	for _, r := range reloaders {
		if err := r.reload(); err != nil {
			log.Error("reload failed, keeping the previous version", "what", r.what, "err", fmt.Errorf("reload: %w", err))
			failed++
			continue
		}
		log.Info("reloaded", "what", r.what)
	}
	log.Info("reloaded on SIGHUP", "reloads", len(reloaders), "failed", failed)
}
