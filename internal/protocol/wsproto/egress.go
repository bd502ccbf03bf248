package wsproto

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// EgressHeader is the response header by which a server reports, when it
// accepts a session's first connection, the egress allowlist its code is
// held to (codemode-sandbox --egress): the entries separated by commas,
// as [FormatEgress] writes them. A server whose code has no egress sends
// no such header, and neither does a server older than the header; a
// client that expects an allowlist refuses both.
const EgressHeader = "Codemode-Egress"

// Bounds of an egress allowlist on the wire.
const (
	MaxEgressEntries    = 256
	MaxEgressEntryBytes = 260 // a 253-byte name, a colon and a port
)

// ErrBadEgress is wrapped by the errors of [ParseEgress].
var ErrBadEgress = errors.New("wsproto: bad egress allowlist")

// FormatEgress writes an allowlist as the value of [EgressHeader]: its
// entries, in the canonical order of [NormalizeEgress], separated by
// commas. It checks what [ParseEgress] checks.
func FormatEgress(allow []string) (string, error) {
	list, err := NormalizeEgress(allow)
	if err != nil {
		return "", err
	}
	return strings.Join(list, ","), nil
}

// ParseEgress reads the value of [EgressHeader], strictly: at most
// [MaxEgressEntries] entries of at most [MaxEgressEntryBytes] bytes each,
// each of the letters, digits and punctuation a host:port entry may hold.
// The empty value is the empty list. It returns the entries in the order
// of [NormalizeEgress].
func ParseEgress(v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	if len(v) > MaxEgressEntries*(MaxEgressEntryBytes+1) {
		return nil, fmt.Errorf("%w: %d bytes, more than %d entries could take", ErrBadEgress, len(v), MaxEgressEntries)
	}
	if n := strings.Count(v, ",") + 1; n > MaxEgressEntries {
		return nil, fmt.Errorf("%w: %d entries, more than %d", ErrBadEgress, n, MaxEgressEntries)
	}
	return NormalizeEgress(strings.Split(v, ","))
}

// NormalizeEgress checks an allowlist's entries as [ParseEgress] does and
// returns them trimmed, in lower case, sorted and without duplicates, so
// that two lists that allow the same entries compare equal.
func NormalizeEgress(allow []string) ([]string, error) {
	if len(allow) > MaxEgressEntries {
		return nil, fmt.Errorf("%w: %d entries, more than %d", ErrBadEgress, len(allow), MaxEgressEntries)
	}
	out := make([]string, 0, len(allow))
	for _, e := range allow {
		e = strings.ToLower(strings.TrimSpace(e))
		if err := checkEgressEntry(e); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// checkEgressEntry checks an entry's size and characters; what the entry
// means is package egress's to check.
func checkEgressEntry(e string) error {
	if e == "" {
		return fmt.Errorf("%w: an empty entry", ErrBadEgress)
	}
	if len(e) > MaxEgressEntryBytes {
		return fmt.Errorf("%w: an entry of %d bytes, more than %d", ErrBadEgress, len(e), MaxEgressEntryBytes)
	}
	if !strings.Contains(e, ":") {
		return fmt.Errorf("%w: the entry %q has no port", ErrBadEgress, e)
	}
	for _, c := range e {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.ContainsRune(".-_*:[]", c)) {
			return fmt.Errorf("%w: the entry %q holds %q; an entry is host:port, *.suffix:port or ip:port", ErrBadEgress, e, c)
		}
	}
	return nil
}
