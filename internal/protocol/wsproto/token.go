package wsproto

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MinSecretBytes is the shortest secret a server accepts.
const MinSecretBytes = 16

// tokenPrefix starts every signed token and names its version.
const tokenPrefix = "cm1."

// macDomain separates these MACs from any other use of the secret.
const macDomain = "codemode-sandbox-token/v1\x00"

// Token is what a signed token asserts: the connection belongs to session
// Session, and the token is void after Expires.
type Token struct {
	Session string
	Expires time.Time
}

// NewSessionID returns a random session id: 32 hex digits.
func NewSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// Sign returns the signed token for t: "cm1.<session>.<expiry in Unix
// seconds>.<MAC>", the MAC being HMAC-SHA256 keyed by secret over the
// session and expiry, in unpadded base64url.
func Sign(secret []byte, t Token) string {
	exp := strconv.FormatInt(t.Expires.Unix(), 10)
	return tokenPrefix + t.Session + "." + exp + "." + base64.RawURLEncoding.EncodeToString(mac(secret, t.Session, exp))
}

func mac(secret []byte, session, exp string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(macDomain))
	m.Write([]byte(session))
	m.Write([]byte{0})
	m.Write([]byte(exp))
	return m.Sum(nil)
}

// Errors a [Verifier] returns; each is also the reason the server gives.
var (
	ErrNoToken   = errors.New("no bearer token in the Authorization header")
	ErrBadToken  = errors.New("the token is not valid for this sandbox's secret")
	ErrExpired   = errors.New("the token has expired; sign a fresh one for each connection")
	ErrTooLong   = errors.New("the token's expiry lies further ahead than this sandbox allows")
	ErrReplayed  = errors.New("the token was used before; sign a fresh one for each connection")
	errMalformed = errors.New("the token is malformed")
)

// ParseToken decodes a signed token without checking its MAC: the token
// and the MAC it carries. It fails on anything but the exact form that
// [Sign] writes.
func ParseToken(s string) (Token, []byte, error) {
	rest, ok := strings.CutPrefix(s, tokenPrefix)
	if !ok || len(s) > 256 {
		return Token{}, nil, errMalformed
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return Token{}, nil, errMalformed
	}
	session, exp, sig := parts[0], parts[1], parts[2]
	if len(session) == 0 || len(session) > 64 || strings.IndexFunc(session, notIDRune) >= 0 {
		return Token{}, nil, fmt.Errorf("%w: the session id must be 1 to 64 letters, digits, '-' or '_'", errMalformed)
	}
	if len(exp) == 0 || len(exp) > 12 || strings.IndexFunc(exp, notDigit) >= 0 || exp[0] == '0' {
		return Token{}, nil, fmt.Errorf("%w: bad expiry", errMalformed)
	}
	secs, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		return Token{}, nil, fmt.Errorf("%w: bad expiry", errMalformed)
	}
	// The decoder skips CR and LF, so check the alphabet first: one token,
	// one spelling.
	if len(sig) != 43 || strings.IndexFunc(sig, notIDRune) >= 0 {
		return Token{}, nil, fmt.Errorf("%w: bad MAC encoding", errMalformed)
	}
	m, err := base64.RawURLEncoding.Strict().DecodeString(sig)
	if err != nil || len(m) != sha256.Size {
		return Token{}, nil, fmt.Errorf("%w: bad MAC encoding", errMalformed)
	}
	return Token{Session: session, Expires: time.Unix(secs, 0)}, m, nil
}

func notIDRune(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
}

func notDigit(r rune) bool { return r < '0' || r > '9' }

// Verifier checks the bearer tokens of a server's connections. It is safe
// for concurrent use.
type Verifier struct {
	// Secret is the server's secret. Required.
	Secret []byte
	// MaxLifetime is the furthest ahead an expiry may lie. Zero means 5
	// minutes.
	MaxLifetime time.Duration
	// Skew is the clock difference allowed between client and server, on
	// both ends of a token's life. Zero means 30s.
	Skew time.Duration
	// Now, if set, is the clock (for tests).
	Now func() time.Time

	mu   sync.Mutex
	used map[string]time.Time // session id -> expiry
}

// maxUsed bounds the remembered session ids; past it, expired ones are
// dropped, and if none has expired new tokens are refused.
const maxUsed = 4096

// Verify checks the value of an Authorization header: "Bearer " and
// either a signed token, whose session id it then records as used, or the
// secret itself. It returns the session id ("" for the secret).
func (v *Verifier) Verify(authorization string) (string, error) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	tok = strings.TrimSpace(tok)
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", ErrNoToken
	}
	t, m, perr := ParseToken(tok)
	if perr != nil {
		// Not a signed token: the secret itself (upstream's rule), in
		// constant time whatever the lengths.
		a, b := sha256.Sum256([]byte(tok)), sha256.Sum256(v.Secret)
		if subtle.ConstantTimeCompare(a[:], b[:]) == 1 {
			return "", nil
		}
		if strings.HasPrefix(tok, tokenPrefix) {
			return "", perr
		}
		return "", ErrBadToken
	}
	if !hmac.Equal(m, mac(v.Secret, t.Session, strconv.FormatInt(t.Expires.Unix(), 10))) {
		return "", ErrBadToken
	}
	now := time.Now()
	if v.Now != nil {
		now = v.Now()
	}
	skew, life := v.Skew, v.MaxLifetime
	if skew <= 0 {
		skew = 30 * time.Second
	}
	if life <= 0 {
		life = 5 * time.Minute
	}
	switch {
	case now.After(t.Expires.Add(skew)):
		return "", ErrExpired
	case t.Expires.Sub(now) > life+skew:
		return "", ErrTooLong
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.used[t.Session]; ok {
		return "", ErrReplayed
	}
	if v.used == nil {
		v.used = map[string]time.Time{}
	}
	if len(v.used) >= maxUsed {
		for id, exp := range v.used {
			if now.After(exp.Add(skew)) {
				delete(v.used, id)
			}
		}
		if len(v.used) >= maxUsed {
			return "", ErrReplayed
		}
	}
	v.used[t.Session] = t.Expires
	return t.Session, nil
}
