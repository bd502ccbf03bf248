package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/adk-codemode/codemode/backend/docker"
	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/transport"
)

const doctorUsage = `Usage: codemode doctor [flags]

Starts a real jail and reports, per backend, which protections this host
actually enforces, and measures session starts without a pool. The "jail
(forked)" column is a session forked from a template process (the
default start of jail.Backend), the "jail (cold)" column one started in a
fresh jail (jail.Backend.Cold), each read back from the session. The docker column is
what the engine applied to a sandbox container of --image, read back
from the engine; the engine is found as the docker CLI finds it
($DOCKER_HOST, else $DOCKER_CONTEXT, else the current context of the
docker config file). Exits non-zero when the default backend (jail)
cannot run here.

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
	image := fs.String("image", "", "the docker column's sandbox `image` (default "+docker.DefaultImage+")")
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
	// The forked column: a session forked from a template process (the
	// default start of jail.Backend), read back from the session itself.
	fe, fstart, ferr := jail.CheckForked(ctx, jail.Config{Python: *python})
	fok := ok && ferr == nil
	fyn := func(b bool) string {
		if !fok {
			return "-"
		}
		if b {
			return "yes"
		}
		return "no"
	}
	db, derr := docker.New(docker.Config{Image: *image})
	var d docker.Enforcement
	if derr == nil {
		defer func() { _ = db.Close() }()
		dctx, dcancel := context.WithTimeout(ctx, 30*time.Second)
		d, derr = db.Enforced(dctx)
		dcancel()
	}
	dok := derr == nil
	dv := func(v string) string {
		if !dok {
			return "-"
		}
		return v
	}
	dyn := func(b bool) string {
		if b {
			return dv("yes")
		}
		return dv("no")
	}
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
	fmt.Fprintln(tw, "protection\tjail (cold)\tjail (forked)\tdocker\tunsandboxed")
	row := func(name, jailVal, forkedVal, dockerVal string) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\tno\n", name, jailVal, forkedVal, dockerVal)
	}
	row("user namespace", yn(e.UserNS), fyn(fe.UserNS), dv("no (user "+d.User+")"))
	row("mount namespace, read-only root", yn(e.MountNS && e.ReadOnlyRoot), fyn(fe.MountNS && fe.ReadOnlyRoot), dyn(d.ReadOnlyRoot))
	row("pid namespace", yn(e.PIDNS), fyn(fe.PIDNS), dv("yes"))
	row("net namespace (no network)", yn(e.NetNS && e.Loopback && len(rep.Interfaces) <= 1 && !rep.HostLoopbackReachable), fyn(fe.NetNS && fe.Loopback), dyn(d.NetworkMode == "none"))
	row("ipc namespace", yn(e.IPCNS), fyn(fe.IPCNS), dv(d.IpcMode))
	row("uts namespace", yn(e.UTSNS), fyn(fe.UTSNS), dv("yes"))
	row("seccomp filter", yn(e.Seccomp), fyn(fe.Seccomp), dv(d.Seccomp))
	row("no_new_privs", yn(e.NoNewPrivs), fyn(fe.NoNewPrivs), dyn(d.NoNewPrivileges))
	row("capabilities dropped", yn(e.CapsDropped), fyn(fe.CapsDropped), dyn(d.CapDropAll))
	row("cgroup memory limit", yn(e.CgroupMemory), fyn(fe.CgroupMemory), dv(limit(d.MemoryBytes, "bytes")))
	row("cgroup pids limit", yn(e.CgroupPids), fyn(fe.CgroupPids), dv(limit(d.PidsLimit, "")))
	rl, frl := "-", "-"
	if ok {
		rl = fmt.Sprintf("%d set", len(e.Rlimits))
	}
	if fok {
		frl = fmt.Sprintf("%d set", len(fe.Rlimits))
	}
	fmt.Fprintf(tw, "rlimits\t%s\t%s\t%s\tno\n", rl, frl, dv("engine default"))
	mode := "-"
	if ok {
		mode = "root (uid map: " + e.UIDMap + ")"
		if e.Rootless {
			mode = "rootless (uid map: " + e.UIDMap + ")"
		}
	}
	fmode := "-"
	if fok {
		fmode = "root (uid map: " + fe.UIDMap + ")"
		if fe.Rootless {
			fmode = "rootless (uid map: " + fe.UIDMap + ")"
		}
	}
	fmt.Fprintf(tw, "mode\t%s\t%s\t%s\thost user\n", mode, fmode, dv(d.Engine+" "+d.EngineVersion+" at "+d.Host+" (from "+d.HostSource+")"))
	if ok {
		fstartText := "-"
		if fok {
			fstartText = fstart.Round(100 * time.Microsecond).String()
		}
		fmt.Fprintf(tw, "session start, no pool (median of %d)\t%s\t%s\t-\t%s (bare python -c pass)\n", rep.Runs, rep.ColdStart.Round(100*time.Microsecond), fstartText, rep.BareStart.Round(100*time.Microsecond))
	}
	tw.Flush()
	if ok && ferr != nil {
		fmt.Fprintf(stdout, "\njail (forked): %v\n", ferr)
	}
	if dok {
		d, env, err := sessionStart(ctx, db)
		if err != nil {
			fmt.Fprintf(stdout, "\ndocker session: failed: %v\n", err)
		} else {
			fmt.Fprintf(stdout, "\ndocker session ready in %s (image %s, Python %s, %d importable packages)\n", d.Round(100*time.Microsecond), *imageOr(image), env.PythonVersion, len(env.Packages))
		}
	} else {
		fmt.Fprintf(stdout, "\ndocker: %v\n", derr)
	}

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

// limit prints a limit, zero as none.
func limit(v int64, unit string) string {
	if v <= 0 {
		return "none"
	}
	if unit != "" {
		return fmt.Sprintf("%d %s", v, unit)
	}
	return fmt.Sprint(v)
}

// imageOr is the image flag, or the default image.
func imageOr(image *string) *string {
	if *image == "" {
		s := docker.DefaultImage
		return &s
	}
	return image
}
