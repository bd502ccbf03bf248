package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/adk-codemode/codemode/egress"
	"github.com/adk-codemode/codemode/internal/testsupport/loopback"
)

// testResolveEnv names the variable by which the tests map host names to
// 127.0.0.1 for the egress proxy ("a.test,b.test"), so that an allowlist
// of test names reaches loopback servers. It is for testing only: it is
// honoured only by a server that listens on a loopback address, maps
// names to loopback and nothing else, and is logged as a warning.
const testResolveEnv = "CODEMODE_SANDBOX_TEST_RESOLVE"

// egressPolicy is the policy of --egress and --egress-allow-address, nil
// without them; addr is the address the server listens on.
func (l *listenFlags) egressPolicy(addr string, logger *slog.Logger) (*egress.Policy, error) {
	_, testing := os.LookupEnv(testResolveEnv)
	names := os.Getenv(testResolveEnv)
	_ = os.Unsetenv(testResolveEnv)
	if len(l.egress) == 0 {
		if len(l.egressAllowAddresses) > 0 {
			return nil, errors.New("--egress-allow-address is for --egress: it lets hosts on the allowlist resolve to the addresses it names")
		}
		return nil, nil
	}
	if !l.jail {
		return nil, errors.New("--egress needs --jail: the allowlist is enforced by a proxy on the jail's host side, and without the jail " +
			"the container is the boundary and its network is the operator's to set (give it none, or restrict it with the platform's own egress rules)")
	}
	addrs, err := egress.ParseAddresses(l.egressAllowAddresses)
	if err != nil {
		return nil, fmt.Errorf("--egress-allow-address %w", err)
	}
	p := &egress.Policy{Allow: l.egress, AllowAddresses: addrs, Logger: logger}
	if testing {
		host, _, err := net.SplitHostPort(addr)
		ip, perr := netip.ParseAddr(host)
		if err != nil || perr != nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("$%s is for tests only, and is honoured only by a server that listens on a loopback address, not %s: unset it", testResolveEnv, addr)
		}
		p.Resolver = loopback.Names(strings.Split(names, ",")...)
		logger.Warn("testing: the egress proxy resolves these names to 127.0.0.1 ($"+testResolveEnv+")", "names", names)
	}
	if _, err := egress.New(*p); err != nil {
		return nil, fmt.Errorf("--egress: %w", err)
	}
	return p, nil
}

// logEgress logs the policy a jailed server's sessions are held to.
func logEgress(logger *slog.Logger, p *egress.Policy) {
	if p == nil {
		logger.Info("egress: none: code has no network")
		return
	}
	addrs := make([]string, len(p.AllowAddresses))
	for i, pf := range p.AllowAddresses {
		addrs[i] = pf.String()
	}
	logger.Info("egress: code reaches only these hosts, through the server's proxy",
		"allow", strings.Join(p.Allow, ","), "allow addresses", strings.Join(addrs, ","),
		"max connections", egress.DefaultMaxConnections, "max bytes", egress.DefaultMaxBytes, "max connection duration", egress.DefaultMaxConnDuration)
}
