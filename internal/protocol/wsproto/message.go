package wsproto

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/adk-codemode/codemode/internal/protocol/wire"
)

// The kinds of message after the files message, each a binary message
// whose first byte is its kind.
const (
	// kindSession: the server's first message on a session's first
	// connection: the resume key (32 bytes), then the session id.
	kindSession = 'S'
	// kindAck: uvarint, the number of data messages received. Each side
	// sends one first on every connection, the point to resume from.
	kindAck = 'A'
	// kindData: uvarint sequence number (from 0), uvarint
	// acknowledgement, then the payload: bytes of the frame stream.
	kindData = 'D'
)

const (
	keyBytes     = 32
	maxHeader    = 1 + 2*binary.MaxVarintLen64
	maxSessionID = 64
)

// message is one decoded message.
type message struct {
	kind    byte
	seq     uint64 // data
	ack     uint64 // ack and data
	payload []byte // data; aliases the input
	key     []byte // session
	id      string // session
}

// decodeMessage decodes a message strictly: a known kind, canonical
// varints, and for a session message a key and a valid session id.
func decodeMessage(b []byte) (message, error) {
	if len(b) == 0 {
		return message{}, fmt.Errorf("%w: an empty message", wire.ErrProtocol)
	}
	m := message{kind: b[0]}
	rest := b[1:]
	var err error
	switch m.kind {
	case kindAck:
		if m.ack, rest, err = uvarint(rest); err != nil {
			return message{}, err
		}
		if len(rest) != 0 {
			return message{}, fmt.Errorf("%w: %d bytes after an ack", wire.ErrProtocol, len(rest))
		}
	case kindData:
		if m.seq, rest, err = uvarint(rest); err != nil {
			return message{}, err
		}
		if m.ack, rest, err = uvarint(rest); err != nil {
			return message{}, err
		}
		if len(rest) == 0 {
			return message{}, fmt.Errorf("%w: a data message without data", wire.ErrProtocol)
		}
		m.payload = rest
	case kindSession:
		if len(rest) < keyBytes+1 {
			return message{}, fmt.Errorf("%w: a session message of %d bytes is too short", wire.ErrProtocol, len(b))
		}
		m.key, m.id = rest[:keyBytes], string(rest[keyBytes:])
		if err := checkSessionID(m.id); err != nil {
			return message{}, fmt.Errorf("%w: %w", wire.ErrProtocol, err)
		}
	default:
		return message{}, fmt.Errorf("%w: unknown message kind %#x", wire.ErrProtocol, m.kind)
	}
	return m, nil
}

func uvarint(b []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 || n != len(binary.AppendUvarint(nil, v)) {
		return 0, nil, fmt.Errorf("%w: a bad number in a message header", wire.ErrProtocol)
	}
	return v, b[n:], nil
}

func appendAck(b []byte, ack uint64) []byte {
	return binary.AppendUvarint(append(b, kindAck), ack)
}

func appendData(b []byte, seq, ack uint64, payload []byte) []byte {
	b = binary.AppendUvarint(append(b, kindData), seq)
	return append(binary.AppendUvarint(b, ack), payload...)
}

func appendSession(b []byte, key []byte, id string) []byte {
	return append(append(append(b, kindSession), key...), id...)
}

func checkSessionID(id string) error {
	if len(id) == 0 || len(id) > maxSessionID || strings.IndexFunc(id, notIDRune) >= 0 {
		return errors.New("the session id must be 1 to 64 letters, digits, '-' or '_'")
	}
	return nil
}

func newKey() []byte {
	k := make([]byte, keyBytes)
	_, _ = rand.Read(k) // never fails (crypto/rand)
	return k
}

// ResumeHeader is the request header that asks to resume a session: its
// value is a resume credential.
const ResumeHeader = "Codemode-Resume"

// resumePrefix starts every resume credential and names its version.
const resumePrefix = "cr1."

// resumeDomain separates these MACs from any other use of a key.
const resumeDomain = "codemode-resume/v1\x00"

// Errors a server gives for a refused resume; each is also the reason it
// sends.
var (
	ErrResumeRefused  = errors.New("the resume credential is not valid for this session")
	ErrResumeReplayed = errors.New("the resume credential was used before; each resume attempt signs a fresh one")
	ErrOtherSession   = errors.New("this sandbox serves another session; the session to resume is gone")
	ErrSessionEnded   = errors.New("the session to resume has ended")
)

// resumeCredential is "cr1.<session>.<attempt>.<MAC>": the MAC being
// HMAC-SHA256, keyed by the session's resume key, over the session id and
// the attempt number, in unpadded base64url.
func resumeCredential(key []byte, id string, attempt uint64) string {
	n := strconv.FormatUint(attempt, 10)
	return resumePrefix + id + "." + n + "." + base64.RawURLEncoding.EncodeToString(resumeMAC(key, id, n))
}

func resumeMAC(key []byte, id, attempt string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(resumeDomain))
	m.Write([]byte(id))
	m.Write([]byte{0})
	m.Write([]byte(attempt))
	return m.Sum(nil)
}

// parseResume decodes a resume credential without checking its MAC. It
// fails on anything but the exact form that resumeCredential writes.
func parseResume(s string) (id string, attempt uint64, mac []byte, err error) {
	bad := func(why string) (string, uint64, []byte, error) {
		return "", 0, nil, fmt.Errorf("%w: %s", ErrResumeRefused, why)
	}
	rest, ok := strings.CutPrefix(s, resumePrefix)
	if !ok || len(s) > 256 {
		return bad("malformed")
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return bad("malformed")
	}
	if checkSessionID(parts[0]) != nil {
		return bad("malformed session id")
	}
	n := parts[1]
	if len(n) == 0 || len(n) > 19 || strings.IndexFunc(n, notDigit) >= 0 || n[0] == '0' {
		return bad("malformed attempt number")
	}
	attempt, perr := strconv.ParseUint(n, 10, 64)
	if perr != nil {
		return bad("malformed attempt number")
	}
	if len(parts[2]) != 43 || strings.IndexFunc(parts[2], notIDRune) >= 0 {
		return bad("bad MAC encoding")
	}
	mac, derr := base64.RawURLEncoding.Strict().DecodeString(parts[2])
	if derr != nil || len(mac) != sha256.Size {
		return bad("bad MAC encoding")
	}
	return parts[0], attempt, mac, nil
}
