package serve

import (
	"fmt"
	"strings"
)

// check verifies what spans several settings, once all are set.
func (c *config) check() error {
	for _, name := range []string{"tls-listen", "wss-listen"} {
		if _, ok := c.origin[name]; ok && (c.TLSCert == "" || c.TLSKey == "") {
			return fmt.Errorf("%s needs tls-cert and tls-key: the certificate and key the listener presents", c.where(name))
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		set, missing := "tls-cert", "tls-key"
		if c.TLSCert == "" {
			set, missing = missing, set
		}
		return fmt.Errorf("%s needs %s too", c.where(set), missing)
	}
	if c.TLSClientCA != "" && len(c.TLSListen)+len(c.WSSListen) == 0 {
		return fmt.Errorf("%s is set but there is no tls-listen or wss-listen to use it", c.where("tls-client-ca"))
	}
	return nil
}

// where names the setting as it was given: --name, ONCEMQ_NAME, or FILE:LINE: name.
func (c *config) where(name string) string {
	o := c.origin[name]
	if strings.HasPrefix(o, "--") || !strings.Contains(o, ":") {
		return o
	}
	return o + ": " + name
}
