package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/crypto/pbkdf2"
)

// DefaultIterations is the PBKDF2 iteration count HashPassword uses: OWASP's figure for
// PBKDF2-HMAC-SHA512. mosquitto_passwd writes 101, which costs an attacker with the file little;
// the count is part of each hash, so mosquitto reads either.
const DefaultIterations = 210000

// saltLen is the salt of a hash HashPassword writes: 12 bytes, as mosquitto_passwd writes (mosquitto
// reads a salt of 12 or 64 bytes only).
const saltLen = 12

// hash is one decoded password hash.
type hash interface {
	verify(password []byte) bool
	weak() bool // a fast hash, reported at start-up
}

// errUnknownHash is wrapped by parseHash for a string no known format starts.
var errUnknownHash = errors.New("unknown password hash format (want $7$, $argon2id$, $6$ or bcrypt $2a$/$2b$/$2y$)")

// parseHash decodes the hash part of a password file line.
func parseHash(s string) (hash, error) {
	switch {
	case strings.HasPrefix(s, "$7$"):
		return parsePBKDF2(s[3:])
	case strings.HasPrefix(s, "$6$"):
		return parseSHA512(s[3:])
	case strings.HasPrefix(s, "$argon2id$"):
		return parseArgon2id(s)
	case strings.HasPrefix(s, "$2a$"), strings.HasPrefix(s, "$2b$"), strings.HasPrefix(s, "$2y$"):
		if _, err := bcrypt.Cost([]byte(s)); err != nil {
			return nil, fmt.Errorf("bcrypt hash: %w", err)
		}
		return bcryptHash(s), nil
	}
	return nil, errUnknownHash
}

// pbkdf2Hash is mosquitto's $7$ITERATIONS$SALT$HASH: PBKDF2-HMAC-SHA512 of the password, salt and
// hash in standard base64.
type pbkdf2Hash struct {
	iterations int
	salt, sum  []byte
}

func parsePBKDF2(s string) (hash, error) {
	parts := strings.Split(s, "$")
	if len(parts) != 3 {
		return nil, errors.New("$7$ hash: want $7$ITERATIONS$SALT$HASH")
	}
	n, err := strconv.Atoi(parts[0])
	if err != nil || n < 1 {
		return nil, fmt.Errorf("$7$ hash: iteration count %q", parts[0])
	}
	salt, sum, err := decodeSaltAndSum(parts[1], parts[2])
	if err != nil {
		return nil, fmt.Errorf("$7$ hash: %w", err)
	}
	return &pbkdf2Hash{iterations: n, salt: salt, sum: sum}, nil
}

func (h *pbkdf2Hash) verify(password []byte) bool {
	got := pbkdf2.Key(password, h.salt, h.iterations, len(h.sum), sha512.New)
	return hmac.Equal(got, h.sum)
}

func (h *pbkdf2Hash) weak() bool { return false }

// sha512Hash is mosquitto's old $6$SALT$HASH: one SHA-512 over the password followed by the salt.
type sha512Hash struct{ salt, sum []byte }

func parseSHA512(s string) (hash, error) {
	saltB64, sumB64, ok := strings.Cut(s, "$")
	if !ok {
		return nil, errors.New("$6$ hash: want $6$SALT$HASH")
	}
	salt, sum, err := decodeSaltAndSum(saltB64, sumB64)
	if err != nil {
		return nil, fmt.Errorf("$6$ hash: %w", err)
	}
	return &sha512Hash{salt: salt, sum: sum}, nil
}

func (h *sha512Hash) verify(password []byte) bool {
	d := sha512.New()
	d.Write(password)
	d.Write(h.salt)
	return hmac.Equal(d.Sum(nil), h.sum)
}

func (h *sha512Hash) weak() bool { return true }

// decodeSaltAndSum decodes the base64 salt and the 64-byte SHA-512 sum of a $6$ or $7$ hash.
func decodeSaltAndSum(saltB64, sumB64 string) (salt, sum []byte, err error) {
	if salt, err = base64.StdEncoding.DecodeString(saltB64); err != nil || len(salt) == 0 {
		return nil, nil, errors.New("salt is not base64")
	}
	if sum, err = base64.StdEncoding.DecodeString(sumB64); err != nil || len(sum) != sha512.Size {
		return nil, nil, errors.New("hash is not 64 bytes of base64")
	}
	return salt, sum, nil
}

// argon2idHash is the PHC string libargon2 encodes, which newer mosquitto writes:
// $argon2id$v=19$m=MEMORY_KIB,t=TIME,p=THREADS$SALT$HASH, salt and hash in unpadded base64.
type argon2idHash struct {
	time, memory uint32
	threads      uint8
	salt, sum    []byte
}

func parseArgon2id(s string) (hash, error) {
	parts := strings.Split(s, "$") // "", "argon2id", "v=19", "m=..,t=..,p=..", salt, hash
	if len(parts) != 6 || parts[2] != "v=19" {
		return nil, errors.New("$argon2id$ hash: want $argon2id$v=19$m=M,t=T,p=P$SALT$HASH")
	}
	h := &argon2idHash{}
	var threads uint32
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &h.memory, &h.time, &threads); err != nil ||
		h.time < 1 || threads < 1 || threads > 255 || h.memory < 8*threads {
		return nil, fmt.Errorf("$argon2id$ hash: parameters %q", parts[3])
	}
	h.threads = uint8(threads)
	var err error
	if h.salt, err = base64.RawStdEncoding.DecodeString(parts[4]); err != nil || len(h.salt) < 8 {
		return nil, errors.New("$argon2id$ hash: salt is not base64")
	}
	if h.sum, err = base64.RawStdEncoding.DecodeString(parts[5]); err != nil || len(h.sum) < 4 {
		return nil, errors.New("$argon2id$ hash: hash is not base64")
	}
	return h, nil
}

func (h *argon2idHash) verify(password []byte) bool {
	got := argon2.IDKey(password, h.salt, h.time, h.memory, h.threads, uint32(len(h.sum)))
	return hmac.Equal(got, h.sum)
}

func (h *argon2idHash) weak() bool { return false }

// bcryptHash is a bcrypt string ($2a$, $2b$ or $2y$), as other tools write into mosquitto files.
type bcryptHash string

func (h bcryptHash) verify(password []byte) bool {
	return bcrypt.CompareHashAndPassword([]byte(h), password) == nil
}

func (h bcryptHash) weak() bool { return false }

// HashPassword returns password hashed the way mosquitto_passwd does by default, $7$ (PBKDF2-SHA512)
// with a random 12-byte salt, but with iterations rounds (DefaultIterations when 0), so that both
// oncemq and mosquitto read it.
func HashPassword(password []byte, iterations int) (string, error) {
	if iterations <= 0 {
		iterations = DefaultIterations
	}
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("salt: %w", err)
	}
	sum := pbkdf2.Key(password, salt, iterations, sha512.Size, sha512.New)
	return fmt.Sprintf("$7$%d$%s$%s", iterations, base64.StdEncoding.EncodeToString(salt),
		base64.StdEncoding.EncodeToString(sum)), nil
}
