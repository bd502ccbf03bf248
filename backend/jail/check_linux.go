//go:build linux && amd64

package jail

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"time"
)

// checkRuns is how many cold starts Check times (each, jailed and bare).
const checkRuns = 5

// checkProbe runs in the jail: it lists interfaces and tries the host's
// loopback listener whose port is argv[1].
const checkProbe = `
import json, socket, sys
names = [n for _, n in socket.if_nameindex()]
s = socket.socket(); s.settimeout(2)
try:
    s.connect(("127.0.0.1", int(sys.argv[1]))); reach = True
except OSError:
    reach = False
print(json.dumps({"ifaces": names, "reach": reach}))
`

// Check probes what this host can enforce by starting a real jail with cfg
// and running a small Python probe in it, then times cold starts: the
// median of a few `python -c pass` runs in a fresh jail each versus a plain
// exec of the same interpreter. It is meant for a `doctor` command. When
// namespaces are unavailable the error wraps [ErrUnsupported], whose
// message names the alternatives.
func Check(ctx context.Context, cfg Config) (Report, error) {
	var rep Report
	ip, err := resolvePython(cfg.Python)
	if err != nil {
		return rep, err
	}
	rep.Python, rep.PythonPrefix = ip.bin, ip.prefix

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return rep, fmt.Errorf("jail: check: listen on host loopback: %w", err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	var out, errb bytes.Buffer
	c, err := Start(ctx, cfg, Spec{
		Args:   []string{ip.bin, "-I", "-c", checkProbe, port},
		Env:    []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"},
		Stdout: &out, Stderr: &errb,
	})
	if err != nil {
		return rep, err
	}
	rep.Enforcement = c.Enforced()
	if err := c.Wait(); err != nil {
		return rep, fmt.Errorf("jail: check: probe failed: %w: %s", err, errb.Bytes())
	}
	var probe struct {
		Ifaces []string
		Reach  bool
	}
	if err := json.Unmarshal(out.Bytes(), &probe); err != nil {
		return rep, fmt.Errorf("jail: check: probe output %q: %w", out.Bytes(), err)
	}
	rep.Interfaces, rep.HostLoopbackReachable = probe.Ifaces, probe.Reach
	if rep.HostLoopbackReachable || !slices.Equal(probe.Ifaces, []string{"lo"}) {
		rep.Enforcement.Loopback = false
	}

	var jailed, bare []time.Duration
	for range checkRuns {
		t0 := time.Now()
		c, err := Start(ctx, cfg, Spec{Args: []string{ip.bin, "-c", "pass"}})
		if err != nil {
			return rep, err
		}
		if err := c.Wait(); err != nil {
			return rep, fmt.Errorf("jail: check: python -c pass in a jail: %w", err)
		}
		jailed = append(jailed, time.Since(t0))

		t0 = time.Now()
		if err := exec.CommandContext(ctx, ip.bin, "-c", "pass").Run(); err != nil {
			return rep, fmt.Errorf("jail: check: bare python: %w", err)
		}
		bare = append(bare, time.Since(t0))
	}
	rep.ColdStart, rep.BareStart, rep.Runs = median(jailed), median(bare), checkRuns
	return rep, ctx.Err()
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
