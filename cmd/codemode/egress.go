package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/adk-codemode/codemode/egress"
)

// egressFlags are --egress and --egress-allow-address, which exec, mcp
// and doctor share.
type egressFlags struct {
	allow, addresses egress.List
}

func (e *egressFlags) register(fs *flag.FlagSet) {
	fs.Var(&e.allow, "egress", "let the code reach `host:port` (or *.suffix:port) through the egress proxy, and nothing else; repeat it or separate entries with commas. "+
		"For the jail and docker backends; with --backend remote, the list the server enforces (codemode-sandbox --egress), which the session is refused unless it matches. Without it the code has no network")
	fs.Var(&e.addresses, "egress-allow-address", "with --egress: an address or `prefix` (10.0.0.0/8) that allowed hosts may resolve to though the proxy refuses it by default "+
		"(private, loopback, link-local...); repeatable")
}

// policy is the jail's and docker's egress policy of the flags, nil without
// --egress.
func (e *egressFlags) policy() (*egress.Policy, error) {
	if len(e.allow) == 0 {
		if len(e.addresses) > 0 {
			return nil, fmt.Errorf("--egress-allow-address is for --egress: it lets hosts on the allowlist resolve to the addresses it names")
		}
		return nil, nil
	}
	addrs, err := egress.ParseAddresses(e.addresses)
	if err != nil {
		return nil, fmt.Errorf("--egress-allow-address %w", err)
	}
	p := &egress.Policy{Allow: e.allow, AllowAddresses: addrs}
	if _, err := egress.New(*p); err != nil {
		return nil, fmt.Errorf("--egress: %w", err)
	}
	return p, nil
}

// writeEgress writes the egress policy a session would get: where is
// who enforces it, for the heading.
func writeEgress(w io.Writer, p *egress.Policy, where string) {
	if p == nil {
		fmt.Fprintln(w, "egress: none: code has no network (allow hosts with --egress host:port)")
		return
	}
	fmt.Fprintf(w, "egress: %s\n", where)
	fmt.Fprintf(w, "  allowed hosts:     %s\n", strings.Join(p.Allow, ", "))
	if len(p.AllowAddresses) > 0 {
		addrs := make([]string, len(p.AllowAddresses))
		for i, pf := range p.AllowAddresses {
			addrs[i] = pf.String()
		}
		fmt.Fprintf(w, "  allowed addresses: %s (--egress-allow-address)\n", strings.Join(addrs, ", "))
	}
	fmt.Fprintln(w, "  refused addresses: loopback, private, link-local (cloud metadata), unique-local, multicast, unspecified, "+
		"carrier-grade NAT, reserved and documentation ranges, the other cloud metadata addresses, this host's own; "+
		"a name is resolved by the proxy, checked, and connected to at the address checked")
	fmt.Fprintf(w, "  bounds per session: %d connections at once, %d MiB both ways, %s per connection; redirects are not followed\n",
		egress.DefaultMaxConnections, egress.DefaultMaxBytes>>20, egress.DefaultMaxConnDuration)
	fmt.Fprintln(w, "  the model is told: "+p.Describe())
}
