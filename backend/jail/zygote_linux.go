//go:build linux && amd64

package jail

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/internal/both/clip"
	"github.com/adk-codemode/codemode/internal/both/observe"
	"github.com/adk-codemode/codemode/internal/both/server"
	"github.com/adk-codemode/codemode/internal/both/syscallpolicy"
	"github.com/adk-codemode/codemode/internal/both/tailbuf"
	"github.com/adk-codemode/codemode/internal/host/launch"
	"github.com/adk-codemode/codemode/internal/host/sandboxbin"
	"github.com/adk-codemode/codemode/internal/protocol/jailplan"
	"github.com/adk-codemode/codemode/transport"
)

// zygoteSource is the template process: a Python program that loads the
// runner and forks sessions (see zygote.py).
//
//go:embed zygote.py
var zygoteSource string

// zygoteBootstrap is the template's command line program: it reads the
// template's source from fd 5 to EOF and runs it, so that the command line
// (what ps and /proc/<pid>/cmdline show) stays short and holds no source.
const zygoteBootstrap = `import os
def _read(fd):
    parts = []
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            break
        parts.append(b)
    os.close(fd)
    return b"".join(parts)
exec(compile(_read(5), "<codemode-template>", "exec"))
`

// Bounds of the template's handshakes. A template that does not answer in
// time is taken for stuck: it is retired and the session starts cold.
var (
	zygoteReadyTimeout = 60 * time.Second // the template's own start
	zygoteHelloTimeout = 15 * time.Second // a forked session's first word
	zygoteSetupTimeout = 60 * time.Second // a forked session's setup
	zygoteRetry        = 10 * time.Second // after a template failed to start
)

// zygoteTasks is the task limit of a template's own jail. Sessions leave
// its cgroup as soon as they exist, but the kernel also counts every
// session's tasks against the template's RLIMIT_NPROC (user namespaces
// nest), so it must leave room for many sessions; each session's own
// limits are set in the session.
const zygoteTasks = 1 << 16

// maxStatusLine bounds a forked session's setup report.
const maxStatusLine = 1 << 20

// zygote is one running template.
type zygote struct {
	key    string
	cfg    Config // with defaults
	cmd    *Cmd
	ctrl   *os.File // host end of the control socket (SOCK_SEQPACKET)
	stderr *tailbuf.Buffer

	mu      sync.Mutex // serialises requests on ctrl, guards retired
	retired bool

	spare     chan *forked // at most one blank session, forked ahead
	refilling atomic.Bool
	ended     chan struct{} // closed when the template's jail has ended
	hello     atomic.Int64  // zygoteHelloTimeout, in ns (tests shorten it for one template)
}

func (z *zygote) helloTimeout() time.Duration { return time.Duration(z.hello.Load()) }

// zygotes holds the live template per jail configuration.
var zygotes = struct {
	sync.Mutex
	live    map[string]*zygote
	failed  map[string]zygoteFailure // the last failure, when its sessions must start cold for a while
	running map[*zygote]struct{}     // every template whose jail has not ended, live or retired
}{live: map[string]*zygote{}, failed: map[string]zygoteFailure{}, running: map[*zygote]struct{}{}}

type zygoteFailure struct {
	at  time.Time
	err error
}

// zygoteKey identifies the jail configuration a template serves: all of
// Config except the files, which are the session's.
func zygoteKey(cfg Config) string {
	cfg.Files = nil
	b, _ := json.Marshal(cfg)
	return string(b)
}

// getZygote returns the live template for cfg, starting one if there is
// none. A start that failed is not retried for zygoteRetry.
func getZygote(cfg Config) (*zygote, error) {
	key := zygoteKey(cfg)
	zygotes.Lock()
	defer zygotes.Unlock()
	if z := zygotes.live[key]; z != nil {
		if !z.isRetired() {
			return z, nil
		}
		delete(zygotes.live, key)
	}
	if f, ok := zygotes.failed[key]; ok && time.Since(f.at) < zygoteRetry {
		return nil, fmt.Errorf("%w failed %s ago (it is tried again after %s): %w",
			errTemplate, time.Since(f.at).Round(time.Millisecond), zygoteRetry, f.err)
	}
	z, err := startZygote(cfg, key)
	if err != nil {
		zygotes.failed[key] = zygoteFailure{time.Now(), err}
		return nil, err
	}
	delete(zygotes.failed, key)
	zygotes.live[key] = z
	select {
	case <-z.ended:
	default:
		zygotes.running[z] = struct{}{}
	}
	return z, nil
}

// stopZygote retires the template for cfg, if any, and waits up to wait
// for its jail to end (it ends with its last session).
func stopZygote(cfg Config, wait time.Duration) error {
	key := zygoteKey(cfg)
	zygotes.Lock()
	z := zygotes.live[key]
	delete(zygotes.live, key)
	zygotes.Unlock()
	if z == nil {
		return nil
	}
	z.retire()
	select {
	case <-z.ended:
		return z.cmd.cleanupErr()
	case <-time.After(wait):
		return fmt.Errorf("jail: the template process still has sessions after %s", wait)
	}
}

// startZygote starts a template in a jail of its own, configured as the
// sessions it will fork are, and waits until it is ready to fork.
func startZygote(cfg Config, key string) (*zygote, error) {
	python, err := cfg.Interpreter()
	if err != nil {
		return nil, err
	}
	zc := cfg
	zc.Files = nil
	zc.Python = python
	zc.Processes = zygoteTasks
	// No RLIMIT_AS on the template: its sessions exec the sandbox program as
	// their supervisor, whose Go runtime reserves far more address space
	// than it uses (a cold session's supervisor runs without the limit
	// too). Each session's workers get the limit (zygote.py's _worker,
	// and the supervisor for the workers it starts).
	zc.AddressSpaceBytes = -1
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("jail: template socket: %w", err)
	}
	ctrl := os.NewFile(uintptr(fds[0]), "zygote-ctrl")
	sbx := os.NewFile(uintptr(fds[1]), "zygote-ctrl-sandbox")
	defer sbx.Close()
	srcR, srcW, err := os.Pipe()
	if err != nil {
		ctrl.Close()
		return nil, err
	}
	defer srcR.Close()
	tplR, tplW, err := os.Pipe()
	if err != nil {
		ctrl.Close()
		srcW.Close()
		return nil, err
	}
	defer tplR.Close()
	// The sandbox program, which each session execs as its supervisor
	// (fd 6 of the template; see zygote.py).
	exe, err := sandboxbin.Open()
	if err != nil {
		ctrl.Close()
		srcW.Close()
		tplW.Close()
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	plans, err := templatePlans(cfg.withDefaults())
	if err != nil {
		ctrl.Close()
		srcW.Close()
		tplW.Close()
		exe.Close()
		return nil, err
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "CODEMODE_ZYGOTE_PLANS=" + string(plans)}
	if probe, err := server.ProbeInterpreter(context.Background(), python); err == nil {
		if b, err := json.Marshal(probe.SysPath); err == nil {
			env = append(env, "CODEMODE_ZYGOTE_SYS_PATH="+string(b))
		}
	}
	// The setup plan's interpreter (fd 7).
	planR, planW, err := os.Pipe()
	if err != nil {
		ctrl.Close()
		srcW.Close()
		tplW.Close()
		return nil, err
	}
	defer planR.Close()
	stderr := &tailbuf.Buffer{Max: 16 << 10}
	cmd, err := Start(context.Background(), zc, Spec{
		Args:       []string{python, "-I", "-B", "-S", "-c", zygoteBootstrap},
		Env:        env,
		Stderr:     stderr,
		ExtraFiles: []*os.File{sbx, srcR, tplR, exe, planR},
		template:   true,
	})
	if err != nil {
		ctrl.Close()
		srcW.Close()
		tplW.Close()
		planW.Close()
		return nil, err
	}
	go func() {
		_, _ = io.WriteString(tplW, zygoteSource)
		tplW.Close()
	}()
	go func() {
		_, _ = io.WriteString(planW, jailplan.PythonSource)
		planW.Close()
	}()
	go func() {
		_, _ = io.WriteString(srcW, server.RunnerSource())
		srcW.Close()
	}()
	z := &zygote{key: key, cfg: cfg, cmd: cmd, ctrl: ctrl, stderr: stderr, spare: make(chan *forked, 1), ended: make(chan struct{})}
	z.hello.Store(int64(zygoteHelloTimeout))
	ready := make(chan error, 1)
	ctrlFD := int(ctrl.Fd())
	go func() {
		buf := make([]byte, 16)
		n, err := unix.Read(ctrlFD, buf)
		for errors.Is(err, unix.EINTR) {
			n, err = unix.Read(ctrlFD, buf)
		}
		switch {
		case err == nil && n <= 0:
			err = errors.New("it exited before it was ready")
		case err == nil && string(buf[:n]) != "ready":
			err = fmt.Errorf("it said %q instead of ready", buf[:n])
		}
		ready <- err
	}()
	err = awaitTemplate(ready, cmd)
	if err != nil {
		_ = cmd.Kill()
		_ = cmd.Wait()
		ctrl.Close()
		msg := strings.TrimSpace(stderr.String())
		return nil, limitHit(fmt.Errorf("jail: the template process did not start: %w\n%s", err, msg), cmd.Usage(), zc.withDefaults())
	}
	go func() {
		// The jail ends once the template and every session forked from
		// it have ended (a template that dies alone forks no more, which
		// the next request finds out).
		_ = cmd.Wait()
		z.retire()
		zygotes.Lock()
		delete(zygotes.running, z)
		zygotes.Unlock()
		close(z.ended)
	}()
	return z, nil
}

// templatePlans are the plans every session of a template for cfg runs
// before it is chosen, as zygote.py takes them: "name" (the template's
// own), "enter" (a session's namespaces: inside, it is PayloadID in both
// modes, mapped onto the template's own ids, PayloadID as root and 0
// rootless) and "prepare" (its mounts, names, loopback, bounding set and
// securebits).
func templatePlans(cfg Config) ([]byte, error) {
	tid := PayloadID
	if os.Geteuid() != 0 {
		tid = 0
	}
	return json.Marshal(map[string]jailplan.Plan{
		"name":  jailplan.Named("codemode-zygote"),
		"enter": jailplan.Enter(jailplan.IDMap{Inside: PayloadID, UID: tid, GID: tid}),
		"prepare": jailplan.Prepare(jailplan.Blank{
			Name: "codemode-spare", WorkspaceBytes: cfg.WorkspaceBytes, TmpBytes: cfg.TmpBytes, UID: PayloadID,
			Rootless: os.Geteuid() != 0,
		}),
	})
}

// awaitTemplate waits for the template's ready message, and no longer
// than zygoteReadyTimeout. A template killed by its jail's memory limit
// leaves the jail's init waiting, and sends nothing: the jail's cgroups
// are watched, so that it fails at once, with the limit named.
func awaitTemplate(ready <-chan error, cmd *Cmd) error {
	timeout := time.After(zygoteReadyTimeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-ready:
			return err
		case <-timeout:
			return fmt.Errorf("not ready after %s", zygoteReadyTimeout)
		case <-tick.C:
			if oom, pids := cmd.cg.limitsHit(); oom > 0 || pids > 0 {
				return fmt.Errorf("a limit of its jail stopped it (%d processes killed for memory, %d forks refused)", oom, pids)
			}
		}
	}
}

func (z *zygote) isRetired() bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.retired
}

// retire stops the template forking: it exits when its control socket
// closes, and its jail ends with the last of its sessions.
func (z *zygote) retire() {
	z.mu.Lock()
	defer z.mu.Unlock()
	if !z.retired {
		z.retired = true
		z.ctrl.Close()
		select {
		case f := <-z.spare:
			go f.discard()
		default:
		}
	}
}

// retireBroken retires a template found dead or stuck, so that the next
// session gets a new one.
func (z *zygote) retireBroken() {
	z.retire()
	zygotes.Lock()
	if zygotes.live[z.key] == z {
		delete(zygotes.live, z.key)
	}
	zygotes.Unlock()
}

// request asks the template to fork a session that owns the
// descriptors (its setup socket).
func (z *zygote) request(files ...*os.File) error {
	fds := make([]int, 0, len(files))
	for _, f := range files {
		rc, err := f.SyscallConn()
		if err != nil {
			return err
		}
		if err := rc.Control(func(fd uintptr) { fds = append(fds, int(fd)) }); err != nil {
			return err
		}
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.retired {
		return errors.New("jail: the template process was retired")
	}
	fd := int(z.ctrl.Fd())
	deadline := time.Now().Add(z.helloTimeout())
	for {
		err := unix.Sendmsg(fd, []byte{'f'}, unix.UnixRights(fds...), nil, unix.MSG_DONTWAIT)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if !errors.Is(err, unix.EAGAIN) {
			runtime.KeepAlive(files)
			return err
		}
		// Its queue is full: give it time to catch up.
		if time.Now().After(deadline) {
			return fmt.Errorf("took no request for %s", z.helloTimeout())
		}
		_, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}, 100)
	}
}

// editForkPlan, when set (by tests), changes each forked session's plan.
var editForkPlan func(*jailplan.Plan)

// forkConfig is what a forked session gets over its setup socket.
type forkConfig struct {
	// Plan is the rest of its setup (jailplan.Lock).
	Plan jailplan.Plan `json:"plan"`
	// Stage and Supervisor are the argv of the supervisor the session
	// execs once it is set up (the cold path's, less the compiled runner).
	Stage      string          `json:"stage"`
	Supervisor json.RawMessage `json:"supervisor"`
}

// forkStatus is a forked session's setup report.
type forkStatus struct {
	Op      string           `json:"op"`
	Errno   int              `json:"errno"`
	Msg     string           `json:"msg"`
	Reports map[string]int64 `json:"reports"`
}

// err is the setup failure st reports, or nil.
func (st *forkStatus) err() error {
	if st.Op == "" {
		return nil
	}
	var e error = errors.New(clip.String(st.Msg, 400))
	if st.Errno != 0 {
		e = syscall.Errno(st.Errno)
	}
	return &SetupError{Op: clip.String(st.Op, 200) + " (forked session)", Err: e}
}

// errTemplate marks a failure of the template itself (dead or stuck), as
// opposed to a failure of the session's own setup.
var errTemplate = errors.New("jail: the template process")

// forked is a session forked from the template and placed in its
// cgroups, waiting for its config: it holds nothing of any session yet.
type forked struct {
	conn *net.UnixConn // the setup socket
	rest []byte        // read past the hello
	cmd  *Cmd
}

// discard kills a forked session that will not be used.
func (f *forked) discard() {
	_ = f.conn.Close()
	_ = f.cmd.Kill()
	_ = f.cmd.Wait()
}

// forkBlank has the template fork a session and places it in cgroups of
// its own, made while the template forks.
func (z *zygote) forkBlank() (*forked, error) {
	cfg := z.cfg
	rootless := os.Geteuid() != 0
	cgc := make(chan *cgroupSet, 1)
	go func() {
		if !rootless || cgroupsWritable() {
			cgc <- newCgroups(cfg.MemoryBytes, cfg.Processes)
		} else {
			cgc <- &cgroupSet{}
		}
	}()
	var cmd *Cmd
	fail := func(err error) (*forked, error) {
		if cmd != nil {
			_ = cmd.Kill()
			_ = cmd.Wait() // removes the cgroups
		} else {
			_ = (<-cgc).remove()
		}
		return nil, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	hostF := os.NewFile(uintptr(fds[0]), "session-setup")
	sbxF := os.NewFile(uintptr(fds[1]), "session-setup-sandbox")
	if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		hostF.Close()
		sbxF.Close()
		return fail(err)
	}
	err = z.request(sbxF)
	sbxF.Close()
	if err != nil {
		hostF.Close()
		z.retireBroken()
		return fail(fmt.Errorf("%w is gone: %w", errTemplate, err))
	}
	fc, err := net.FileConn(hostF)
	hostF.Close()
	if err != nil {
		return fail(err)
	}
	conn := fc.(*net.UnixConn)
	// The session's first word carries its pid, as the kernel saw it.
	_ = conn.SetReadDeadline(time.Now().Add(z.helloTimeout()))
	pid, rest, err := readHello(conn)
	if err != nil {
		_ = conn.Close()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			z.retireBroken()
			return fail(fmt.Errorf("%w did not fork a session within %s", errTemplate, z.helloTimeout()))
		}
		if errors.Is(err, io.EOF) {
			z.retireBroken()
			return fail(fmt.Errorf("%w: the forked session ended before it reported%s", errTemplate, zygoteStderr(z)))
		}
		var se *SetupError
		if errors.As(err, &se) {
			// Its sessions cannot make their namespaces here: use the
			// cold path for a while.
			z.retireBroken()
			zygotes.Lock()
			zygotes.failed[z.key] = zygoteFailure{time.Now(), err}
			zygotes.Unlock()
		}
		return fail(fmt.Errorf("jail: forked session: %w", err))
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		_ = conn.Close()
		return fail(fmt.Errorf("jail: forked session: pidfd_open %d: %w", pid, err))
	}
	cmd = &Cmd{pidfd: pidfd, pid: pid, exited: make(chan struct{}), cg: <-cgc}
	go cmd.watchPidfd()
	if err := cmd.cg.attach(pid); err != nil {
		_ = conn.Close()
		return fail(err)
	}
	return &forked{conn: conn, rest: rest, cmd: cmd}, nil
}

// take returns the spare blank session, or forks one: placing a process
// in a cgroup waits for an RCU grace period on cgroup v1, several
// milliseconds that the spare takes off the session's start. ahead says
// whether it was. The next spare is forked once the session has started
// (refill): forked now, it would take CPU time from this start on a
// machine of few cores.
func (z *zygote) take() (f *forked, ahead bool, err error) {
	select {
	case f = <-z.spare:
		return f, true, nil
	default:
	}
	f, err = z.forkBlank()
	return f, false, err
}

// refill has a spare blank session forked in the background if there is
// none and no refill is under way; once it returns, a refill is under way
// or was not needed. The session that took the last spare calls it once
// its start is over, whether it succeeded or not.
func (z *zygote) refill() {
	if !z.refilling.CompareAndSwap(false, true) {
		return
	}
	go z.forkSpare()
}

// forkSpare is refill's work, with refilling set.
func (z *zygote) forkSpare() {
	defer z.refilling.Store(false)
	if z.isRetired() || len(z.spare) > 0 {
		return
	}
	f, err := z.forkBlank()
	if err != nil {
		return
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.retired {
		go f.discard()
		return
	}
	select {
	case z.spare <- f:
	default:
		go f.discard()
	}
}

// forkSession forks a session from the template for cfg and runs the
// supervisor command c in it. It returns a *Cmd for the session's pid 1,
// and the template once a session was taken from it, whose refill the
// caller calls when the session's start is over.
func forkSession(ctx context.Context, cfg Config, c launch.Command, connector *os.File) (*Cmd, *zygote, error) {
	cfg = cfg.withDefaults()
	filesBytes, err := checkFiles(cfg.Files)
	if err != nil {
		return nil, nil, err
	}
	sup, err := supervisorConfig(c.Args)
	if err != nil {
		return nil, nil, err
	}
	filter, err := syscallpolicy.FilterBytes(false)
	if err != nil {
		return nil, nil, err
	}
	z, err := getZygote(cfg)
	if err != nil {
		return nil, nil, err
	}
	f, ahead, err := z.take()
	if err != nil {
		return nil, z, err
	}
	cmd, err := setUpForked(ctx, cfg, c, connector, z, f, ahead, filesBytes, sup, filter)
	return cmd, z, err
}

// setUpForked sends the blank session f its config and checks what its
// setup did.
func setUpForked(ctx context.Context, cfg Config, c launch.Command, connector *os.File, z *zygote, f *forked, ahead bool, filesBytes int64, sup json.RawMessage, filter []byte) (*Cmd, error) {
	observe.Event(ctx, "codemode.sandbox.template_fork", attribute.Bool("codemode.jail.forked_ahead", ahead))
	conn, cmd := f.conn, f.cmd
	defer func() { _ = conn.Close() }()
	ok := false
	defer func() {
		if !ok {
			_ = cmd.Kill()
			_ = cmd.Wait()
		}
	}()
	rootless := os.Geteuid() != 0
	nproc := uint64(cfg.Processes)
	if cmd.cg.pids != nil {
		nproc += 16 // as Start: the pids cgroup trips first
	}
	// A session cannot raise a hard limit above its template's, whose
	// RLIMIT_NPROC is zygoteTasks (its other limits are the session's).
	nproc = min(nproc, zygoteTasks)
	plan, err := jailplan.Lock{
		Name: "codemode-forked", Prepared: true, CgroupNS: true, Files: cfg.Files, FilesBytes: filesBytes,
		Limits: jailplan.Limits{
			CPU: uint64(cfg.CPUSeconds), FileSize: uint64(cfg.FileSizeBytes), OpenFiles: uint64(cfg.OpenFiles), Processes: nproc,
		},
		Rootless: rootless, Filter: filter,
	}.Build()
	if err != nil {
		return nil, err
	}
	if editForkPlan != nil {
		editForkPlan(&plan)
	}
	fcfg := forkConfig{Plan: plan, Stage: c.Args[0], Supervisor: sup}
	line, err := json.Marshal(fcfg)
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(zygoteSetupTimeout))
	files := []*os.File{c.Socket, errW}
	if connector != nil {
		files = append(files, connector) // the egress connector
	}
	err = sendWithFiles(conn, append(line, '\n'), files...)
	errW.Close()
	if err != nil {
		errR.Close()
		return nil, fmt.Errorf("%w: send the forked session its config: %w", errTemplate, err)
	}
	go func() {
		w := c.Stderr
		if w == nil {
			w = io.Discard
		}
		_, _ = io.Copy(w, errR)
		errR.Close()
	}()
	var st forkStatus
	if err := readStatus(conn, f.rest, &st); err != nil {
		return nil, fmt.Errorf("jail: forked session: setup report: %w", err)
	}
	if err := st.err(); err != nil {
		return nil, err
	}
	if st.Reports == nil {
		return nil, errors.New("jail: forked session: setup report without results")
	}
	enf := readBack(cmd.pid, []int{os.Getpid(), z.cmd.Pid()}, st.Reports, jailplan.Securebits(rootless, jailplan.DropAll))
	enf.Forked = true
	enf.Rootless = rootless
	if cfg.AddressSpaceBytes >= 0 && enf.Rlimits != nil {
		enf.Rlimits["AS"] = jailplan.EffectiveLimit(unix.RLIMIT_AS, uint64(cfg.AddressSpaceBytes))
	}
	enf.UIDMap = forkedUIDMap(cmd.pid)
	cmd.cg.enforce(&enf)
	cmd.enf = enf
	observe.Event(ctx, "codemode.sandbox.setup", attribute.String("codemode.sandbox.start_path", "forked"))
	ok = true
	return cmd, nil
}

// sendWithFiles writes line with the descriptors of files passed along
// with its first bytes.
func sendWithFiles(conn *net.UnixConn, line []byte, files ...*os.File) error {
	fds := make([]int, 0, len(files))
	for _, f := range files {
		rc, err := f.SyscallConn()
		if err != nil {
			return err
		}
		if err := rc.Control(func(fd uintptr) { fds = append(fds, int(fd)) }); err != nil {
			return err
		}
	}
	n, _, err := conn.WriteMsgUnix(line, unix.UnixRights(fds...), nil)
	runtime.KeepAlive(files)
	if err != nil {
		return err
	}
	if n < len(line) {
		_, err = conn.Write(line[n:])
	}
	return err
}

func zygoteStderr(z *zygote) string {
	if s := strings.TrimSpace(z.stderr.String()); s != "" {
		return "\n" + s
	}
	return ""
}

// supervisorConfig takes the supervisor's config from its argv, without
// the compiled runner: a forked session's first worker has the runner
// loaded already, and the session passes the config to exec, which
// bounds one argument to 128 KiB.
func supervisorConfig(args []string) (json.RawMessage, error) {
	if len(args) != 2 || args[0] != server.SupervisorStage {
		return nil, errors.New("jail: a forked session runs only the supervisor")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args[1]), &m); err != nil {
		return nil, fmt.Errorf("jail: supervisor config: %w", err)
	}
	delete(m, "runner_code")
	delete(m, "runner_version")
	return json.Marshal(m)
}

// readHello reads the session's hello line and the credentials the kernel
// attached to it; it returns the sender's pid in this pid namespace and
// any bytes read past the line.
func readHello(conn *net.UnixConn) (int, []byte, error) {
	buf := make([]byte, 64)
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return 0, nil, err
	}
	if n == 0 {
		return 0, nil, io.EOF
	}
	if !bytes.HasPrefix(buf[:n], []byte("hello\n")) {
		// A failure before the hello is reported in its place.
		var st forkStatus
		if err := readStatus(conn, buf[:n], &st); err == nil && st.Op != "" {
			return 0, nil, st.err()
		}
		return 0, nil, fmt.Errorf("unexpected first message %q", clip.String(string(buf[:n]), 64))
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return 0, nil, fmt.Errorf("the first message's control data: %w", err)
	}
	if len(msgs) != 1 {
		return 0, nil, fmt.Errorf("%d control messages with the first message; want its credentials", len(msgs))
	}
	cred, err := unix.ParseUnixCredentials(&msgs[0])
	if err != nil {
		return 0, nil, err
	}
	if cred.Pid <= 1 {
		return 0, nil, fmt.Errorf("credentials with pid %d", cred.Pid)
	}
	return int(cred.Pid), buf[len("hello\n"):n], nil
}

// readStatus reads one bounded JSON line into v.
func readStatus(conn *net.UnixConn, rest []byte, v any) error {
	r := bufio.NewReader(io.MultiReader(bytes.NewReader(rest), io.LimitReader(conn, maxStatusLine)))
	line, err := r.ReadBytes('\n')
	if err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("the session ended before it reported")
		}
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// forkedUIDMap describes a forked session's uid map, as the host reads it.
func forkedUIDMap(pid int) string {
	m, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/uid_map")
	if err != nil {
		return "unreadable uid_map: " + err.Error()
	}
	f := strings.Fields(string(m))
	if len(f) != 3 {
		return "unexpected uid_map " + strings.Join(f, " ")
	}
	return fmt.Sprintf("inside %s→host %s (forked session; read from its uid_map)", f[0], f[1])
}

// watchPidfd closes c.exited when the forked session's pid 1 has exited
// (and with it, every process of its pid namespace).
func (c *Cmd) watchPidfd() {
	fds := []unix.PollFd{{Fd: int32(c.pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n > 0 {
			break
		}
	}
	close(c.exited)
}

// closeZygote stops the template of cfg (see [Backend.Close]).
func closeZygote(cfg Config) error { return stopZygote(cfg.withDefaults(), 10*time.Second) }

// stopAllZygotes retires every template and waits for their jails,
// those retired before included.
func stopAllZygotes(wait time.Duration) error {
	zygotes.Lock()
	for k, z := range zygotes.live {
		delete(zygotes.live, k)
		go z.retire()
	}
	all := make([]*zygote, 0, len(zygotes.running))
	for z := range zygotes.running {
		all = append(all, z)
	}
	zygotes.Unlock()
	var errs []error
	deadline := time.After(wait)
	for _, z := range all {
		z.retire()
		select {
		case <-z.ended:
			errs = append(errs, z.cmd.cleanupErr())
		case <-deadline:
			return errors.Join(append(errs, fmt.Errorf("jail: a template process still has sessions after %s", wait))...)
		}
	}
	return errors.Join(errs...)
}

// CheckForked is [Check] for sessions forked from a template (the
// default start of a [Backend]): it opens checkRuns sessions of a Backend with cfg,
// as the backend does, and returns what the first one enforced (read from
// the session) and the median time to open one until its worker was
// ready. It stops the template before it returns. An error means forking
// is not available here; sessions would start cold.
func CheckForked(ctx context.Context, cfg Config) (Enforcement, time.Duration, error) {
	be := &Backend{Config: cfg, forked: true}
	defer func() { _ = be.Close() }()
	var enf Enforcement
	var opens []time.Duration
	for i := range checkRuns {
		t0 := time.Now()
		s, err := be.Open(ctx, transport.SessionConfig{})
		if err != nil {
			return enf, 0, err
		}
		opens = append(opens, time.Since(t0))
		js := s.(*Session)
		fb := js.Fallback()
		if i == 0 {
			enf = js.Enforced()
		}
		js.Close()
		if fb != nil {
			return enf, 0, fb
		}
	}
	return enf, median(opens), nil
}
