package wsproto

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestEgressRoundTrip(t *testing.T) {
	v, err := FormatEgress([]string{"B.example.com:443", "*.example.com:443", "[2001:db8::1]:80", "b.example.com:443"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "*.example.com:443,[2001:db8::1]:80,b.example.com:443"; v != want {
		t.Errorf("FormatEgress = %q, want %q (sorted, lower case, no duplicates)", v, want)
	}
	got, err := ParseEgress(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"*.example.com:443", "[2001:db8::1]:80", "b.example.com:443"}; !slices.Equal(got, want) {
		t.Errorf("ParseEgress = %q, want %q", got, want)
	}
	if got, err := ParseEgress(""); err != nil || got != nil {
		t.Errorf("ParseEgress(\"\") = %q, %v: want the empty list", got, err)
	}
}

func TestParseEgressRefuses(t *testing.T) {
	for name, v := range map[string]string{
		"empty entry":     "a.example:1,,b.example:2",
		"no port":         "a.example",
		"space inside":    "a example:1",
		"control":         "a.example:1\r\nX-Injected: 1",
		"non-ascii":       "ä.example:1",
		"long entry":      strings.Repeat("a", MaxEgressEntryBytes) + ":1",
		"too many":        strings.Repeat("a.example:1,", MaxEgressEntries) + "a.example:1",
		"slash (a range)": "10.0.0.0/8:80",
	} {
		if _, err := ParseEgress(v); !errors.Is(err, ErrBadEgress) {
			t.Errorf("%s: ParseEgress(%.40q) = %v, want ErrBadEgress", name, v, err)
		}
	}
	if _, err := ParseEgress(strings.TrimSuffix(strings.Repeat("a.example:1,", MaxEgressEntries), ",")); err != nil {
		t.Errorf("%d entries, the most: %v", MaxEgressEntries, err)
	}
}

func FuzzParseEgress(f *testing.F) {
	for _, s := range []string{"", "api.example.com:443", "*.example.com:443,a.b:80", "[::1]:1", ",,,", "a:1\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		list, err := ParseEgress(v)
		if err != nil {
			if !errors.Is(err, ErrBadEgress) {
				t.Fatalf("an error that does not wrap ErrBadEgress: %v", err)
			}
			return
		}
		if len(list) > MaxEgressEntries {
			t.Fatalf("%d entries", len(list))
		}
		for _, e := range list {
			if e == "" || len(e) > MaxEgressEntryBytes || strings.ContainsAny(e, ", \r\n") {
				t.Fatalf("a bad entry %q accepted", e)
			}
		}
		// What the server formats, the client reads back unchanged.
		again, err := FormatEgress(list)
		if err != nil {
			t.Fatalf("FormatEgress of a parsed list: %v", err)
		}
		back, err := ParseEgress(again)
		if err != nil || !slices.Equal(back, list) {
			t.Fatalf("round trip: %q -> %q -> %q, %v", list, again, back, err)
		}
	})
}
