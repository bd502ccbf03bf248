// Package loopback is a name resolver for tests of the egress proxy: it
// maps the names it holds to 127.0.0.1 and no other name, so that an
// allowlist's names reach servers on this host's loopback and nothing past
// this host is reached. A policy whose names resolve to loopback also
// needs AllowAddresses naming it. The egress tests, the transporttest
// suite's egress cases and codemode-sandbox's test mode use it.
package loopback

import (
	"context"
	"net"
	"net/netip"
	"strings"
)

// Resolver resolves each name it holds (lower case, without a final dot)
// to 127.0.0.1, as an egress.Resolver.
type Resolver map[string]bool

// Names is a Resolver of names.
func Names(names ...string) Resolver {
	r := Resolver{}
	for _, n := range names {
		if n = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(n), ".")); n != "" {
			r[n] = true
		}
	}
	return r
}

// LookupNetIP resolves host to 127.0.0.1 if r holds it.
func (r Resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if r[strings.ToLower(strings.TrimSuffix(host, "."))] {
		return []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1})}, nil
	}
	return nil, &net.DNSError{Err: "no such host (a test resolver: it maps only the names it was given to 127.0.0.1)", Name: host, IsNotFound: true}
}
