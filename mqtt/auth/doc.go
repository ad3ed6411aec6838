// Package auth is oncemq's users and access rules, in mosquitto's file formats, as hooks of package
// mqtt: an embedding program, or `oncemq serve`, plugs an Authenticator and an Authorizer into
// mqtt.Options.
//
//   - Passwords is a password file as mosquitto_passwd writes it (`user:hash` lines), reading every
//     hash it writes: $7$ (PBKDF2-SHA512, iteration count in the string), $argon2id$ (newer
//     mosquitto), the old $6$ (one salted SHA-512: accepted, reported by Weak) and bcrypt.
//   - Authenticator checks a CONNECT against the Passwords, or takes the username from a verified
//     client certificate, refuses anonymous clients unless told otherwise, and slows the failed
//     logins of each remote address.
//   - ACL is an acl_file in mosquitto's syntax (user, topic, pattern with %u and %c); Authorizer
//     applies it to publish, subscribe and every delivery.
//
// Both hooks can be given a new file while the broker runs (SetPasswords, SetACL), as SIGHUP does.
package auth
