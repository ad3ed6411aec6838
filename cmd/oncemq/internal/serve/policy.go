package serve

import (
	"fmt"
	"net"
	"strings"
)

// accessPolicy is who may connect without credentials, decided from the whole configuration.
type accessPolicy struct {
	anonymous bool // clients without credentials are accepted
}

// decideAccess is the anonymous policy, a pure function of the configuration so that every
// listener kind feeds it: anonymous access is on by default only while no authentication is
// configured and every listener is on a loopback address. Once a password file or client
// certificates are required, clients without credentials are refused unless allowAnonymous. A
// listener off loopback without any authentication stops start-up, naming the listener and the two
// ways out, unless allowAnonymous says anyone is welcome on purpose.
func decideAccess(listeners []string, passwordFile, clientCerts, allowAnonymous bool) (accessPolicy, error) {
	if passwordFile || clientCerts || allowAnonymous {
		return accessPolicy{anonymous: allowAnonymous}, nil
	}
	for _, l := range listeners {
		if !onLoopback(l) {
			return accessPolicy{}, fmt.Errorf("listener %s is not on a loopback address and no authentication is "+
				"configured, so anyone who reaches it could connect: set --password-file FILE (users made with "+
				"oncemq passwd), or --allow-anonymous to accept anyone on purpose", l)
		}
	}
	return accessPolicy{anonymous: true}, nil
}

// onLoopback reports whether the listener address host:port binds a loopback address only: an IP
// such as 127.0.0.1 or ::1, or localhost. An empty host (":1883") is every interface.
func onLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
