package egress

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Defaults of [Policy].
const (
	DefaultMaxConnections  = 16
	DefaultMaxBytes        = 256 << 20
	DefaultMaxConnDuration = 5 * time.Minute
)

// Policy says which hosts code may reach through the proxy, and how much
// it may use. The zero Policy allows nothing.
type Policy struct {
	// Allow lists the hosts code may reach, each with its port:
	// "api.example.com:443" for one name, "*.example.com:443" for every
	// name under example.com (not example.com itself), or an IP address
	// with its port ("203.0.113.7:8080"), which is then allowed even in a
	// refused range.
	Allow []string
	// AllowAddresses are addresses a name on the list may resolve to even
	// though they are in a refused range (loopback, private, link-local,
	// unique-local...): for an internal package mirror, say. Empty refuses
	// every such address.
	AllowAddresses []netip.Prefix
	// MaxConnections bounds the connections one client has open at once.
	// Zero means DefaultMaxConnections.
	MaxConnections int
	// MaxBytes bounds the bytes one client moves, both ways, over the
	// proxy's life or until ResetUsage. Zero means DefaultMaxBytes.
	MaxBytes int64
	// MaxConnDuration bounds each connection. Zero means
	// DefaultMaxConnDuration.
	MaxConnDuration time.Duration
	// Resolver resolves names; nil means net.DefaultResolver.
	Resolver Resolver
	// Dial connects to a checked address ("ip:port"); nil means a
	// net.Dialer with a 10 s timeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Logger hears of every connection allowed and refused; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Resolver resolves a host name to its addresses, as net.Resolver does.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// entry is one parsed Allow entry.
type entry struct {
	host   string // lower case; "" for an address entry
	suffix bool   // *.host
	addr   netip.Addr
	port   uint16
}

// rules is a checked Policy.
type rules struct {
	entries []entry
	allowIP []netip.Prefix
	own     []netip.Addr // the host's own addresses
}

// ErrBadEntry is wrapped by the errors of entries [New] cannot read.
var ErrBadEntry = errors.New("egress: bad allowlist entry")

// parse checks p's entries.
func (p Policy) parse() (*rules, error) {
	r := &rules{allowIP: p.AllowAddresses}
	for _, s := range p.Allow {
		e, err := parseEntry(s)
		if err != nil {
			return nil, err
		}
		r.entries = append(r.entries, e)
	}
	for _, pf := range p.AllowAddresses {
		if !pf.IsValid() {
			return nil, fmt.Errorf("%w: AllowAddresses has an invalid prefix %v", ErrBadEntry, pf)
		}
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok {
					r.own = append(r.own, ip.Unmap())
				}
			}
		}
	}
	return r, nil
}

func parseEntry(s string) (entry, error) {
	bad := func(why string) (entry, error) {
		return entry{}, fmt.Errorf("%w %q: %s; write host:port, *.suffix:port or ip:port, such as api.example.com:443", ErrBadEntry, s, why)
	}
	host, portText, err := net.SplitHostPort(s)
	if err != nil {
		return bad("no port")
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || port == 0 {
		return bad("the port is not a number from 1 to 65535")
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return entry{addr: a.Unmap(), port: uint16(port)}, nil
	}
	if strings.Contains(host, "/") {
		return bad("an address range is not an entry; name hosts, or put the range in AllowAddresses")
	}
	e := entry{port: uint16(port)}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		e.suffix, host = true, rest
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if !validName(host) {
		return bad("not a host name")
	}
	e.host = host
	return e, nil
}

// validName reports whether s is a DNS name of letters, digits, hyphens
// and underscores in dot-separated labels.
func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// match finds the entry that allows host:port, if any. host is lower
// case, without a trailing dot.
func (r *rules) match(host string, port uint16) (entry, bool) {
	ip, err := netip.ParseAddr(host)
	isIP := err == nil
	for _, e := range r.entries {
		if e.port != port {
			continue
		}
		switch {
		case e.addr.IsValid():
			if isIP && ip.Unmap() == e.addr {
				return e, true
			}
		case isIP:
		case e.suffix:
			if strings.HasSuffix(host, "."+e.host) {
				return e, true
			}
		case host == e.host:
			return e, true
		}
	}
	return entry{}, false
}

// refusedRanges are ranges no name may resolve to unless the policy allows
// the address: besides what netip.Addr reports (loopback, private,
// link-local, multicast, unspecified), "this network", carrier-grade NAT,
// IETF protocol assignments, benchmarking, documentation, reserved, and
// the cloud metadata addresses (169.254.169.254 is link-local; these are
// the others in use).
var refusedRanges = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4", "255.255.255.255/32",
		"fd00:ec2::254/128", "100.100.100.200/32", "64:ff9b::/96", "2001:db8::/32",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// refused says why the proxy will not connect to a, or "".
func (r *rules) refused(a netip.Addr, e entry) string {
	a = a.Unmap()
	if e.addr.IsValid() && e.addr == a {
		return "" // the entry names this address
	}
	for _, p := range r.allowIP {
		if p.Contains(a) {
			return ""
		}
	}
	switch {
	case a.IsLoopback():
		return "a loopback address"
	case a.IsPrivate():
		return "a private address"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "a link-local address (cloud metadata services live there)"
	case a.IsMulticast(), a.IsInterfaceLocalMulticast():
		return "a multicast address"
	case a.IsUnspecified():
		return "an unspecified address"
	}
	for _, p := range refusedRanges {
		if p.Contains(a) {
			return "a reserved or special-purpose address"
		}
	}
	for _, own := range r.own {
		if own == a {
			return "an address of the host itself"
		}
	}
	return ""
}

// Describe is the sentence that tells the model what code under p may
// reach, naming at most 20 of its hosts: what a backend with this policy
// gives as its DescribeNetwork (package transport's NetworkDescriber).
func (p Policy) Describe() string {
	const maxNamedHosts = 20
	hosts := strings.Join(p.Allow[:min(len(p.Allow), maxNamedHosts)], ", ")
	if len(p.Allow) > maxNamedHosts {
		hosts += fmt.Sprintf(" and %d more", len(p.Allow)-maxNamedHosts)
	}
	if hosts == "" {
		hosts = "none"
	}
	return "HTTP and HTTPS to the allowed hosts only (" + hosts + "), through the proxy that http_proxy and " +
		"https_proxy name, which urllib, http.client and most libraries use; any other host is refused with HTTP 403"
}

// List is a list of entries as a command line gives them: a flag.Value
// that may be repeated, each value a comma-separated list, for Allow and
// for the addresses ParseAddresses reads.
type List []string

func (l *List) String() string { return strings.Join(*l, ",") }

// Set adds the comma-separated entries of v, trimmed, leaving out empty
// ones.
func (l *List) Set(v string) error {
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			*l = append(*l, e)
		}
	}
	return nil
}

// ParseAddresses reads addresses ("10.1.2.3") and prefixes ("10.0.0.0/8")
// for Policy.AllowAddresses; an address is a prefix of its full length.
func ParseAddresses(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		pf, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("%q: not an address or a prefix (write 10.0.0.0/8 or 10.1.2.3)", s)
			}
			pf = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, pf.Masked())
	}
	return out, nil
}
