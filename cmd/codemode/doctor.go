package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/transport"
)

const doctorUsage = `Usage: codemode doctor [flags]

Starts a real jail and reports, per backend, which protections this host
actually enforces, and measures cold starts. Exits non-zero when the
default backend (jail) cannot run here.

With --url, checks a remote sandbox server instead: its health, that it
accepts this host's token (from $CODEMODE_REMOTE_TOKEN), and a round trip
of code and a tool call; then prints what the sandbox reports. This uses
up the server's one session.

Flags:
`

func runDoctor(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("doctor", doctorUsage, stderr)
	python := fs.String("python", "", "interpreter `path` (default: /usr/bin/python3, else python3 on PATH)")
	url := fs.String("url", "", "check the remote sandbox server at `address` instead")
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	if *url != "" {
		return doctorRemote(*url, stdout, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	rep, jerr := jail.Check(ctx, jail.Config{Python: *python})
	fmt.Fprintf(stdout, "host: %s/%s\n", runtime.GOOS, runtime.GOARCH)
	if rep.Python != "" {
		fmt.Fprintf(stdout, "python: %s (prefix %s)\n", rep.Python, rep.PythonPrefix)
	}
	fmt.Fprintln(stdout)

	e := rep.Enforcement
	ok := jerr == nil
	yn := func(b bool) string {
		if !ok {
			return "-"
		}
		if b {
			return "yes"
		}
		return "no"
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "protection\tjail\tunsandboxed")
	row := func(name string, jailVal string) { fmt.Fprintf(tw, "%s\t%s\tno\n", name, jailVal) }
	row("user namespace", yn(e.UserNS))
	row("mount namespace, read-only root", yn(e.MountNS && e.ReadOnlyRoot))
	row("pid namespace", yn(e.PIDNS))
	row("net namespace (no network)", yn(e.NetNS && e.Loopback && len(rep.Interfaces) <= 1 && !rep.HostLoopbackReachable))
	row("ipc namespace", yn(e.IPCNS))
	row("uts namespace", yn(e.UTSNS))
	row("seccomp filter", yn(e.Seccomp))
	row("no_new_privs", yn(e.NoNewPrivs))
	row("capabilities dropped", yn(e.CapsDropped))
	row("cgroup memory limit", yn(e.CgroupMemory))
	row("cgroup pids limit", yn(e.CgroupPids))
	rl := "-"
	if ok {
		rl = fmt.Sprintf("%d set", len(e.Rlimits))
	}
	fmt.Fprintf(tw, "rlimits\t%s\tno\n", rl)
	mode := "-"
	if ok {
		mode = "root (uid map: " + e.UIDMap + ")"
		if e.Rootless {
			mode = "rootless (uid map: " + e.UIDMap + ")"
		}
	}
	fmt.Fprintf(tw, "mode\t%s\thost user\n", mode)
	if ok {
		fmt.Fprintf(tw, "cold start, python -c pass (median of %d)\t%s\t%s (bare spawn)\n", rep.Runs, rep.ColdStart.Round(100*time.Microsecond), rep.BareStart.Round(100*time.Microsecond))
	}
	tw.Flush()

	if ok {
		fmt.Fprintln(stdout)
		for _, name := range []string{defaultBackend, "unsandboxed"} {
			d, env, err := sessionStart(ctx, backends[name].open(*python))
			if err != nil {
				fmt.Fprintf(stdout, "%s session: failed: %v\n", name, err)
				if name == defaultBackend {
					// The jail starts, but sessions cannot run in it.
					jerr = fmt.Errorf("a session could not start: %w", err)
				}
				continue
			}
			fmt.Fprintf(stdout, "%s session ready in %s (Python %s, %d importable packages)\n", name, d.Round(100*time.Microsecond), env.PythonVersion, len(env.Packages))
		}
	}
	if jerr != nil {
		fmt.Fprintf(stderr, "\ncodemode doctor: the default backend (jail) cannot run here: %v\n", jerr)
		return 1
	}
	return 0
}

// sessionStart opens and closes one session and returns how long it took
// to become ready.
func sessionStart(ctx context.Context, b transport.Backend) (time.Duration, transport.Environment, error) {
	start := time.Now()
	s, err := b.Open(ctx, transport.SessionConfig{})
	if err != nil {
		return 0, transport.Environment{}, err
	}
	d := time.Since(start)
	env := s.Environment()
	return d, env, s.Close()
}
