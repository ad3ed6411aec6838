package auth

import (
	"sync/atomic"

	"github.com/oncemq/oncemq/mqtt"
)

// Authorizer is an mqtt.Authorizer over an ACL: publish and subscribe are checked when they
// arrive, and every delivery, retained messages included, against the read rules, so that a
// subscription to # delivers only what its client may read.
type Authorizer struct {
	acl atomic.Pointer[ACL]
}

var _ mqtt.Authorizer = (*Authorizer)(nil)

// NewAuthorizer returns an Authorizer over acl.
func NewAuthorizer(acl *ACL) *Authorizer {
	a := &Authorizer{}
	a.acl.Store(acl)
	return a
}

// SetACL replaces the rules; they apply at once to every PUBLISH, SUBSCRIBE and delivery that
// follows, the subscriptions of connected clients included.
func (a *Authorizer) SetACL(acl *ACL) { a.acl.Store(acl) }

// CanPublish implements mqtt.Authorizer.
func (a *Authorizer) CanPublish(c *mqtt.Client, name string) bool {
	return a.acl.Load().CanPublish(c.Username, c.ID, name)
}

// CanSubscribe implements mqtt.Authorizer.
func (a *Authorizer) CanSubscribe(c *mqtt.Client, filter string) bool {
	return a.acl.Load().CanSubscribe(c.Username, c.ID, filter)
}

// CanRead implements mqtt.Authorizer. It reads only memory: it is called with the broker's lock held.
func (a *Authorizer) CanRead(clientID, username, name string) bool {
	return a.acl.Load().CanRead(username, clientID, name)
}
