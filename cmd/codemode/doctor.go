package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"slices"
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
fresh jail (jail.Backend.Cold), each read back from the session. Their
session starts are timed alike, each until the session is ready, in one
loop with a bare python -c pass, and shown with their ratio to it. The docker column is
what the engine applied to a sandbox container of --image, read back
from the engine; the engine is found as the docker CLI finds it
($DOCKER_HOST, else $DOCKER_CONTEXT, else the current context of the
docker config file). Exits non-zero when the default backend (jail)
cannot run here.

With --url, checks a remote sandbox server instead: its health, that it
accepts this host's token (from $CODEMODE_REMOTE_TOKEN), and a round trip
of code and a tool call; then prints what the sandbox reports. This uses
up the server's one session.

With --egress (and --egress-allow-address), shows the egress policy exec
and mcp would apply with the same flags: the hosts allowed, what the
proxy refuses by default, and its bounds; without, says that code has no
network. With --url, --egress is the list the server must report.

Flags:
`

// runDoctor implements "codemode doctor": it checks the jail cold and
// forked and the docker engine, writes the table of what each enforces, and
// starts a session of each backend.
func runDoctor(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("doctor", doctorUsage, stderr)
	python := fs.String("python", "", "interpreter `path` (default: /usr/bin/python3, else python3 on PATH)")
	url := fs.String("url", "", "check the remote sandbox server at `address` instead")
	image := fs.String("image", "", "the docker column's sandbox `image` (default "+docker.DefaultImage+")")
	var eg egressFlags
	eg.register(fs)
	if code, ok := parseFlags(fs, args, 0); !ok {
		return code
	}
	policy, err := eg.policy()
	if err != nil {
		fmt.Fprintf(stderr, "codemode doctor: %v\n", err)
		return 2
	}
	if *url != "" {
		if len(eg.addresses) > 0 {
			fmt.Fprintln(stderr, "codemode doctor: --egress-allow-address is not for --url: the sandbox server enforces its own")
			return 2
		}
		return doctorRemote(*url, eg.allow, stdout, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	rep, jerr := jail.Check(ctx, jail.Config{Python: *python})
	writeHost(stdout, rep)
	// The forked column: a session forked from a template process (the
	// default start of jail.Backend), read back from the session itself.
	fe, _, ferr := jail.CheckForked(ctx, jail.Config{Python: *python})
	db, d, derr := checkDocker(ctx, *image)
	if db != nil {
		defer func() { _ = db.Close() }()
	}
	var starts startTimes
	if jerr == nil && ferr == nil {
		starts = measureStarts(ctx, *python)
	}
	t := protectionTable{
		rep: rep, forked: fe, starts: starts, docker: d,
		coldCol: column{ok: jerr == nil}, forkedCol: column{ok: jerr == nil && ferr == nil}, dockerCol: column{ok: derr == nil},
	}
	t.write(stdout)
	fmt.Fprintln(stdout)
	writeEgress(stdout, policy, "the jail and docker backends', enforced by a proxy on this host that the sandbox reaches through a socket (the jail is given it; a container mounts it)")
	if jerr == nil && ferr != nil {
		fmt.Fprintf(stdout, "\njail (forked): %v\n", ferr)
	}
	if derr == nil {
		writeDockerSession(ctx, stdout, db, *imageOr(image))
	} else {
		fmt.Fprintf(stdout, "\ndocker: %v\n", derr)
	}
	if jerr == nil {
		jerr = writeSessionStarts(ctx, stdout, *python)
	}
	if jerr != nil {
		fmt.Fprintf(stderr, "\ncodemode doctor: the default backend (jail) cannot run here: %v\n", jerr)
		return 1
	}
	return 0
}

// writeHost writes the host's platform and the interpreter the jail
// found.
func writeHost(w io.Writer, rep jail.Report) {
	fmt.Fprintf(w, "host: %s/%s\n", runtime.GOOS, runtime.GOARCH)
	switch {
	case rep.Python != "" && rep.PythonPrefix != "":
		fmt.Fprintf(w, "python: %s (its prefix %s mounted read-only in the jail)\n", rep.Python, rep.PythonPrefix)
	case rep.Python != "":
		fmt.Fprintf(w, "python: %s (under /usr, which the jail mounts read-only)\n", rep.Python)
	}
	fmt.Fprintln(w)
}

// checkDocker connects to the docker engine and reads back what it applies
// to a sandbox container of image. It returns the backend, for the caller
// to close, unless connecting failed.
func checkDocker(ctx context.Context, image string) (*docker.Backend, docker.Enforcement, error) {
	db, err := docker.New(docker.Config{Image: image})
	if err != nil {
		return nil, docker.Enforcement{}, err
	}
	dctx, dcancel := context.WithTimeout(ctx, 30*time.Second)
	defer dcancel()
	d, err := db.Enforced(dctx)
	return db, d, err
}

// column is one backend's column of the protection table. A backend that
// could not be checked shows "-" throughout.
type column struct{ ok bool }

// v shows s.
func (c column) v(s string) string {
	if !c.ok {
		return "-"
	}
	return s
}

// yn shows b as yes or no.
func (c column) yn(b bool) string {
	if b {
		return c.v("yes")
	}
	return c.v("no")
}

// protectionTable is what each backend enforces on this host: the jail
// started cold (rep) and forked from a template (forked), how long their
// sessions take to start (starts), the docker engine (docker), and the
// unsandboxed backend, which enforces nothing.
type protectionTable struct {
	rep                           jail.Report
	forked                        jail.Enforcement
	starts                        startTimes
	docker                        docker.Enforcement
	coldCol, forkedCol, dockerCol column
}

// protectionRow is one line of the protection table: a protection and what
// each backend does about it.
type protectionRow struct {
	name, cold, forked, docker, unsandboxed string
}

// rows returns the lines of the table, one per protection, then the mode
// each backend runs in and, when the jail runs, how long a session takes
// to start.
func (t protectionTable) rows() []protectionRow {
	e, fe, d := t.rep.Enforcement, t.forked, t.docker
	jc, fc, dc := t.coldCol, t.forkedCol, t.dockerCol
	rows := []protectionRow{
		{"user namespace", jc.yn(e.UserNS), fc.yn(fe.UserNS), dc.v("no (user " + d.User + ")"), "no"},
		{"mount namespace, read-only root", jc.yn(e.MountNS && e.ReadOnlyRoot), fc.yn(fe.MountNS && fe.ReadOnlyRoot), dc.yn(d.ReadOnlyRoot), "no"},
		{"pid namespace", jc.yn(e.PIDNS), fc.yn(fe.PIDNS), dc.v("yes"), "no"},
		{"net namespace (no network)", jc.yn(e.NetNS && e.Loopback && len(t.rep.Interfaces) <= 1 && !t.rep.HostLoopbackReachable), fc.yn(fe.NetNS && fe.Loopback), dc.yn(d.NetworkMode == "none"), "no"},
		{"ipc namespace", jc.yn(e.IPCNS), fc.yn(fe.IPCNS), dc.v(d.IpcMode), "no"},
		{"uts namespace", jc.yn(e.UTSNS), fc.yn(fe.UTSNS), dc.v("yes"), "no"},
		{"seccomp filter", jc.yn(e.Seccomp), fc.yn(fe.Seccomp), dc.v(d.Seccomp), "no"},
		{"no_new_privs", jc.yn(e.NoNewPrivs), fc.yn(fe.NoNewPrivs), dc.yn(d.NoNewPrivileges), "no"},
		{"capabilities dropped", jc.yn(e.CapsDropped), fc.yn(fe.CapsDropped), dc.yn(d.CapDropAll), "no"},
		{"cgroup memory limit", jc.yn(e.CgroupMemory), fc.yn(fe.CgroupMemory), dc.v(limit(d.MemoryBytes, "bytes")), "no"},
		{"cgroup pids limit", jc.yn(e.CgroupPids), fc.yn(fe.CgroupPids), dc.v(limit(d.PidsLimit, "")), "no"},
		{"rlimits", jc.v(fmt.Sprintf("%d set", len(e.Rlimits))), fc.v(fmt.Sprintf("%d set", len(fe.Rlimits))), dc.v("engine default"), "no"},
		{"mode", jc.v(uidMode(e)), fc.v(uidMode(fe)), dc.v(d.Engine + " " + d.EngineVersion + " at " + d.Host + " (from " + d.HostSource + ")"), "host user"},
	}
	if st := t.starts; st.err == nil && st.runs > 0 {
		ratio := func(d time.Duration) string {
			return fmt.Sprintf("%s (%.2fx bare)", d.Round(100*time.Microsecond), float64(d)/float64(st.bare))
		}
		rows = append(rows, protectionRow{
			fmt.Sprintf("session start, no pool (median of %d, one loop)", st.runs),
			ratio(st.cold), ratio(st.forked), "-",
			st.bare.Round(100*time.Microsecond).String() + " (bare python -c pass)",
		})
	}
	return rows
}

// write writes the table in aligned columns.
func (t protectionTable) write(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "protection\tjail (cold)\tjail (forked)\tdocker\tunsandboxed")
	for _, r := range t.rows() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.name, r.cold, r.forked, r.docker, r.unsandboxed)
	}
	tw.Flush()
}

// uidMode says whether the jail ran as root or rootless, and how it mapped
// user ids.
func uidMode(e jail.Enforcement) string {
	if e.Rootless {
		return "rootless (uid map: " + e.UIDMap + ")"
	}
	return "root (uid map: " + e.UIDMap + ")"
}

// writeDockerSession starts one session of db and says how long it took.
func writeDockerSession(ctx context.Context, w io.Writer, db *docker.Backend, image string) {
	d, env, err := sessionStart(ctx, db)
	if err != nil {
		fmt.Fprintf(w, "\ndocker session: failed: %v\n", err)
		return
	}
	fmt.Fprintf(w, "\ndocker session ready in %s (image %s, Python %s, %d importable packages)\n", d.Round(100*time.Microsecond), image, env.PythonVersion, len(env.Packages))
}

// writeSessionStarts starts one session of the default backend and one of
// the unsandboxed one, and says how long each took. It returns an error
// when the default backend's session could not start: the jail starts,
// but sessions cannot run in it.
func writeSessionStarts(ctx context.Context, w io.Writer, python string) error {
	fmt.Fprintln(w)
	var failed error
	for _, name := range []string{defaultBackend, "unsandboxed"} {
		d, env, err := sessionStart(ctx, backends[name].open(python))
		if err != nil {
			fmt.Fprintf(w, "%s session: failed: %v\n", name, err)
			if name == defaultBackend {
				failed = fmt.Errorf("a session could not start: %w", err)
			}
			continue
		}
		fmt.Fprintf(w, "%s session ready in %s (Python %s, %d importable packages)\n", name, d.Round(100*time.Microsecond), env.PythonVersion, len(env.Packages))
	}
	return failed
}

// startRuns is how many rounds measureStarts times.
const startRuns = 7

// startTimes are the medians of session starts on both of the jail's
// paths and of a bare python -c pass, timed in one loop.
type startTimes struct {
	cold, forked, bare time.Duration
	runs               int
	err                error
}

// measureStarts times, round after round, a bare python -c pass, a session
// forked from a template and a session started cold, each opened until its
// worker is ready and then closed, so that the three are measured alike
// and under the same load. The template starts before the first round.
func measureStarts(ctx context.Context, python string) startTimes {
	forked := &jail.Backend{Config: jail.Config{Python: python}}
	cold := &jail.Backend{Config: jail.Config{Python: python}, Cold: true}
	defer func() { _ = forked.Close(); _ = cold.Close() }()
	bin, err := forked.Config.Interpreter()
	if err != nil {
		return startTimes{err: err}
	}
	if _, _, err := sessionStart(ctx, forked); err != nil {
		return startTimes{err: err}
	}
	var c, f, b []time.Duration
	for range startRuns {
		t0 := time.Now()
		if err := exec.CommandContext(ctx, bin, "-c", "pass").Run(); err != nil {
			return startTimes{err: err}
		}
		b = append(b, time.Since(t0))
		d, _, err := sessionStart(ctx, forked)
		if err != nil {
			return startTimes{err: err}
		}
		f = append(f, d)
		if d, _, err = sessionStart(ctx, cold); err != nil {
			return startTimes{err: err}
		}
		c = append(c, d)
	}
	return startTimes{cold: median(c), forked: median(f), bare: median(b), runs: startRuns}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
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
