package wsproto

import (
	"bytes"
	"strings"
	"testing"
)

func TestMessageRoundTrip(t *testing.T) {
	key := bytes.Repeat([]byte{7}, keyBytes)
	for _, b := range [][]byte{
		appendAck(nil, 0),
		appendAck(nil, 1<<40),
		appendData(nil, 3, 2, []byte("{}\n")),
		appendSession(nil, key, "abc-1"),
	} {
		m, err := decodeMessage(b)
		if err != nil {
			t.Fatalf("decode %q: %v", b, err)
		}
		var again []byte
		switch m.kind {
		case kindAck:
			again = appendAck(nil, m.ack)
		case kindData:
			again = appendData(nil, m.seq, m.ack, m.payload)
		case kindSession:
			again = appendSession(nil, m.key, m.id)
		}
		if !bytes.Equal(again, b) {
			t.Errorf("%q decoded and encoded is %q", b, again)
		}
	}
}

func TestMessageRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  []byte
		want string
	}{
		{"empty", nil, "empty message"},
		{"unknown kind", []byte("X"), "unknown message kind"},
		{"ack with a tail", append(appendAck(nil, 1), 'x'), "after an ack"},
		{"non-canonical varint", []byte{kindAck, 0x80, 0x00}, "bad number"},
		{"truncated varint", []byte{kindData, 0x80}, "bad number"},
		{"data without data", appendData(nil, 0, 0, nil), "without data"},
		{"short session", []byte("Sabc"), "too short"},
		{"bad session id", appendSession(nil, make([]byte, keyBytes), "a/b"), "session id"},
	} {
		if _, err := decodeMessage(tc.msg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: decode = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func FuzzDecodeMessage(f *testing.F) {
	f.Add(appendAck(nil, 5))
	f.Add(appendData(nil, 1, 2, []byte("x\n")))
	f.Add(appendSession(nil, make([]byte, keyBytes), "id"))
	f.Add([]byte{kindData, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 'x'})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMessage(b)
		if err != nil {
			return
		}
		var again []byte
		switch m.kind {
		case kindAck:
			again = appendAck(nil, m.ack)
		case kindData:
			again = appendData(nil, m.seq, m.ack, m.payload)
		case kindSession:
			again = appendSession(nil, m.key, m.id)
		default:
			t.Fatalf("decoded an unknown kind %q", m.kind)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("%q decoded and encoded is %q: one message, two spellings", b, again)
		}
	})
}

func FuzzParseResume(f *testing.F) {
	key := bytes.Repeat([]byte{1}, keyBytes)
	f.Add(resumeCredential(key, "abc", 1))
	f.Add("cr1.abc.01.x")
	f.Add("cr1...")
	f.Fuzz(func(t *testing.T, s string) {
		id, attempt, mac, err := parseResume(s)
		if err != nil {
			return
		}
		// One credential, one spelling: what parses is what would be
		// written for its fields.
		if again := resumeCredential(key, id, attempt); again[:strings.LastIndexByte(again, '.')] != s[:strings.LastIndexByte(s, '.')] || len(mac) != 32 {
			t.Fatalf("%q parsed as %q %d", s, id, attempt)
		}
	})
}
