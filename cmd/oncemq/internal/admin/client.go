package admin

import (
	"net"
	"strings"
)

// DefaultAddr is where the admin commands (health, backup) look for the admin listener when
// neither --http nor ONCEMQ_HTTP_LISTEN says.
const DefaultAddr = "127.0.0.1:9100"

// BaseURL is the URL that reaches the admin listener at addr from this machine: a listener on
// every interface (":9100", "0.0.0.0:9100") is reached on loopback, as the container's own health
// check does.
func BaseURL(addr string) string {
	if strings.HasPrefix(addr, "http://") || strings.HasPrefix(addr, "https://") {
		return strings.TrimRight(addr, "/")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
