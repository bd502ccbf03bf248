package wsproto

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestVerify(t *testing.T) {
	secret := []byte("0123456789abcdef-secret")
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	sign := func(key []byte, session string, expires time.Time) string {
		return "Bearer " + Sign(key, Token{Session: session, Expires: expires})
	}
	tests := []struct {
		name string
		auth string
		want error
	}{
		{"fresh token", sign(secret, "s1", now.Add(5*time.Minute)), nil},
		{"scheme in any case", "bearer " + Sign(secret, Token{Session: "s2", Expires: now.Add(time.Minute)}), nil},
		{"expired within the skew", sign(secret, "s3", now.Add(-20*time.Second)), nil},
		{"the secret itself", "Bearer " + string(secret), nil},
		{"expired", sign(secret, "s4", now.Add(-31*time.Second)), ErrExpired},
		{"expiry too far ahead", sign(secret, "s5", now.Add(6*time.Minute)), ErrTooLong},
		{"wrong secret", sign([]byte("another-secret-of-16"), "s6", now.Add(time.Minute)), ErrBadToken},
		{"wrong plain secret", "Bearer nope", ErrBadToken},
		{"no header", "", ErrNoToken},
		{"other scheme", "Basic " + string(secret), ErrNoToken},
		{"malformed signed token", "Bearer cm1.s7.12", errMalformed},
	}
	v := &Verifier{Secret: secret, Now: clock}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.Verify(tc.auth)
			if !errors.Is(err, tc.want) {
				t.Errorf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestVerifyRefusesReplay(t *testing.T) {
	secret := []byte("0123456789abcdef")
	v := &Verifier{Secret: secret}
	auth := "Bearer " + Sign(secret, Token{Session: NewSessionID(), Expires: time.Now().Add(time.Minute)})
	if _, err := v.Verify(auth); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if _, err := v.Verify(auth); !errors.Is(err, ErrReplayed) {
		t.Fatalf("second use: %v, want ErrReplayed", err)
	}
}

func TestTamperedTokenFails(t *testing.T) {
	secret := []byte("0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	tok := Sign(secret, Token{Session: "abc", Expires: now.Add(time.Minute)}) // expiry 1800000060
	v := &Verifier{Secret: secret, Now: func() time.Time { return now }}
	for _, forged := range []string{
		strings.Replace(tok, ".1800000060.", ".1800000120.", 1), // a later expiry, the same MAC
		strings.Replace(tok, "cm1.abc.", "cm1.abd.", 1),         // another session, the same MAC
	} {
		if forged == tok {
			t.Fatal("the forgery did not change the token")
		}
		if _, err := v.Verify("Bearer " + forged); !errors.Is(err, ErrBadToken) {
			t.Errorf("Verify(%q) = %v, want ErrBadToken", forged, err)
		}
	}
}

func FuzzParseToken(f *testing.F) {
	secret := []byte("0123456789abcdef")
	f.Add(Sign(secret, Token{Session: "abc", Expires: time.Unix(1_800_000_000, 0)}))
	f.Add("cm1...")
	f.Add("cm1.a.1.")
	f.Add("cm1.a.01." + strings.Repeat("A", 43))
	f.Add("Bearer x")
	f.Fuzz(func(t *testing.T, s string) {
		tok, m, err := ParseToken(s)
		if err != nil {
			return
		}
		// Whatever parses is in the form Sign writes, so signing it with
		// its own MAC gives back the input.
		if len(m) != 32 {
			t.Fatalf("MAC of %d bytes", len(m))
		}
		again, _, err := ParseToken(Sign(secret, tok))
		if err != nil || again != tok {
			t.Fatalf("re-signed %+v parses as %+v, %v", tok, again, err)
		}
		v := &Verifier{Secret: secret, Now: func() time.Time { return tok.Expires }}
		if _, err := v.Verify("Bearer " + s); err == nil && Sign(secret, tok) != s {
			t.Fatalf("a token with a MAC other than the secret's was accepted: %q", s)
		}
	})
}
