//go:build linux

package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Procs runs the worker as a child of this process, which becomes a child
// subreaper so that it also reaps (and kills) what the worker leaves
// behind, and tracks the workspace. It assumes it owns every child of the
// process.
type Procs struct {
	cfg     *Config
	reaper  reaper
	stop    chan struct{}
	tracker *Tracker
	adopted bool // Adopt was called; guarded by reaper.mu
}

// Pipes are the host's ends of a worker's pipes.
type Pipes struct {
	In     *os.File // frames to the runner (its fd 3)
	Ctl    *os.File // frames from the runner (its fd 4)
	Stdout *os.File
	Stderr *os.File
}

// NewProcs returns the processes of cfg, whose defaults must be set. It
// makes this process a child subreaper and starts reaping.
func NewProcs(cfg *Config) *Procs {
	p := &Procs{cfg: cfg, stop: make(chan struct{})}
	p.reaper.watch = make(map[int]func(syscall.WaitStatus))
	if cfg.Adopt != nil && cfg.Adopt.Pid > 0 {
		// The worker to adopt may exit before Adopt is called: its status
		// is kept until then.
		p.reaper.watch[cfg.Adopt.Pid] = p.reaper.hold(cfg.Adopt.Pid)
	}
	becomeSubreaper()
	go p.reaper.run(p.stop)
	p.tracker = newTracker(cfg.Workdir, cfg.MaxFiles)
	return p
}

// Files is the workspace tracker.
func (p *Procs) Files() *Tracker { return p.tracker }

// Close stops reaping and releases the tracker; the worker must be dead.
func (p *Procs) Close() {
	close(p.stop)
	p.tracker.Close()
}

// Interrupt sends the worker pid the signal that stops a block in place,
// once every other process of the sandbox is frozen: then nothing the
// code started (a fork bomb, say) keeps the worker from the processor or
// forks meanwhile. [Procs.Settle] ends or resumes them once the block has
// stopped; [Procs.KillAll] kills them.
func (p *Procs) Interrupt(pid int) {
	Freeze(os.Getpid(), pid)
	_ = syscall.Kill(pid, syscall.SIGUSR1)
}

// Settle kills the processes, but the worker pid, that started at or
// after since (the stopped block's start, on CLOCK_BOOTTIME) and resumes
// the others, which earlier blocks started. It returns how many it
// killed.
func (p *Procs) Settle(pid int, since time.Duration) int { return Settle(os.Getpid(), pid, since) }

// KillAll kills every descendant of this process: the worker and every
// process the code started.
func (p *Procs) KillAll() { KillTree(os.Getpid()) }

// Spawn starts the Python runner with the pipes of the worker protocol,
// with its limits applied, and returns its pid and the host's ends of its
// pipes. onExit runs, on the reaper's goroutine, once the process has been
// reaped; it may run before Spawn returns.
func (p *Procs) Spawn(onExit func(syscall.WaitStatus)) (int, Pipes, error) {
	cfg := p.cfg
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return 0, Pipes{}, err
	}
	defer devnull.Close()
	pipes := make([]*os.File, 0, 10)
	closeAll := func() {
		for _, f := range pipes {
			f.Close()
		}
	}
	pipe := func() (*os.File, *os.File) {
		if err != nil {
			return nil, nil
		}
		var r, w *os.File
		r, w, err = os.Pipe()
		pipes = append(pipes, r, w)
		return r, w
	}
	outR, outW := pipe()
	errR, errW := pipe()
	inR, inW := pipe()   // host → runner
	ctlR, ctlW := pipe() // runner → host
	var codeR, codeW *os.File
	if len(cfg.RunnerCode) > 0 {
		codeR, codeW = pipe() // the runner's code, read once at start
	}
	if err != nil {
		closeAll()
		return 0, Pipes{}, fmt.Errorf("sandboxserver: pipes: %w", err)
	}
	env := append([]string(nil), cfg.Env...)
	env = append(env, "CODEMODE_WORKDIR="+cfg.Workdir)
	if cfg.FilesDir != "" {
		env = append(env, "CODEMODE_FILES_DIR="+cfg.FilesDir)
	}
	argv := []string{cfg.Python, "-I", "-B", "-c", runnerSource}
	if len(cfg.SysPath) > 0 {
		// The site module's work was done once, by SysPath's probe: skip
		// it, which saves a good part of the interpreter's start-up.
		b, err := json.Marshal(cfg.SysPath)
		if err != nil {
			closeAll()
			return 0, Pipes{}, err
		}
		env = append(env, "CODEMODE_SYS_PATH="+string(b))
		argv = []string{cfg.Python, "-I", "-B", "-S", "-c", runnerSource}
	}
	files := []*os.File{devnull, outW, errW, inR, ctlW}
	if codeR != nil {
		argv[len(argv)-1] = bootSource
		files = append(files, codeR)
	}
	p.reaper.mu.Lock() // the reaper must not miss the exit of a fresh pid
	proc, err := os.StartProcess(cfg.Python, argv, &os.ProcAttr{
		Dir:   cfg.Workdir,
		Env:   env,
		Files: files,
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		p.reaper.mu.Unlock()
		closeAll()
		return 0, Pipes{}, fmt.Errorf("sandboxserver: start %s: %w", cfg.Python, err)
	}
	// Limits go on before the worker can read a block: it reads none
	// until the host sends one, after ready.
	for _, l := range []struct {
		res  int
		v    int64
		what string
	}{
		{unix.RLIMIT_AS, cfg.WorkerAddressSpace, "address space"},
		{unix.RLIMIT_NPROC, cfg.WorkerProcesses, "processes"},
	} {
		if l.v <= 0 {
			continue
		}
		lim := unix.Rlimit{Cur: uint64(l.v), Max: uint64(l.v)}
		if err := unix.Prlimit(proc.Pid, l.res, &lim, nil); err != nil {
			_ = proc.Kill()
			p.reaper.mu.Unlock()
			closeAll()
			return 0, Pipes{}, fmt.Errorf("sandboxserver: limit the worker's %s: %w", l.what, err)
		}
	}
	pid := proc.Pid
	p.reaper.watch[pid] = onExit
	p.reaper.mu.Unlock()
	_ = proc.Release()
	outW.Close()
	errW.Close()
	inR.Close()
	ctlW.Close()
	if codeR != nil {
		codeR.Close()
		go writeRunner(codeW, cfg.RunnerVersion, cfg.RunnerCode)
	}
	return pid, Pipes{In: inW, Ctl: ctlR, Stdout: outR, Stderr: errR}, nil
}

// Adopt takes the running worker cfg.Adopt names, a child of this
// process, as if Spawn had started it, and returns its pid: onExit runs
// once it has been reaped (at once if it already has been). It fails if
// cfg.Adopt is not set or names no child of this process. The host has
// the worker's pipes already (see Config.Adopt).
func (p *Procs) Adopt(onExit func(syscall.WaitStatus)) (int, error) {
	a := p.cfg.Adopt
	if a == nil || a.Pid <= 0 {
		return 0, errors.New("sandboxserver: no worker to adopt")
	}
	r := &p.reaper
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.adopted {
		return 0, fmt.Errorf("sandboxserver: the worker to adopt, pid %d, is adopted already", a.Pid)
	}
	p.adopted = true
	if st, ok := r.held[a.Pid]; ok {
		delete(r.held, a.Pid)
		onExit(st)
		return a.Pid, nil
	}
	// Still unreaped: it must be our child.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, a.Pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err != nil {
		delete(r.watch, a.Pid)
		return 0, fmt.Errorf("sandboxserver: the worker to adopt, pid %d, is not a child of the supervisor: %w", a.Pid, err)
	}
	r.watch[a.Pid] = onExit
	return a.Pid, nil
}

// bootSource starts a worker from the compiled runner on fd 5, laid out
// as writeRunner writes it. If the interpreter is not the one that
// compiled it, it compiles the runner's source instead.
const bootSource = `import marshal, os, sys
def _boot():
    parts = []
    while True:
        b = os.read(5, 1 << 20)
        if not b:
            break
        parts.append(b)
    os.close(5)
    head, _, data = b"".join(parts).partition(b"\n")
    vn, cn = map(int, head.split())
    if data[:vn].decode() == sys.version:
        return marshal.loads(data[vn:vn + cn])
    return compile(data[vn + cn:], "<string>", "exec")
exec(_boot())
`

// writeRunner writes the header line "<version length> <code length>",
// the version, the compiled runner and its source to w, then closes it.
func writeRunner(w *os.File, version string, code []byte) {
	defer w.Close()
	head := strconv.Itoa(len(version)) + " " + strconv.Itoa(len(code)) + "\n"
	for _, p := range [][]byte{[]byte(head), []byte(version), code, []byte(runnerSource)} {
		if _, err := w.Write(p); err != nil {
			return // the worker died; its start fails and says so
		}
	}
}

// reaper collects every child that exits, including orphans that the
// kernel hands to this process because it is a child subreaper.
type reaper struct {
	mu    sync.Mutex
	watch map[int]func(syscall.WaitStatus)
	held  map[int]syscall.WaitStatus // exits of workers to adopt, reaped before Adopt
}

// hold returns the exit function that keeps pid's status in r.held; it
// runs with r.mu held.
func (r *reaper) hold(pid int) func(syscall.WaitStatus) {
	return func(st syscall.WaitStatus) {
		if r.held == nil {
			r.held = map[int]syscall.WaitStatus{}
		}
		r.held[pid] = st
	}
}

func (r *reaper) run(stop <-chan struct{}) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGCHLD)
	defer signal.Stop(sig)
	tick := time.NewTicker(time.Second) // in case a SIGCHLD is coalesced away
	defer tick.Stop()
	for {
		r.reap()
		select {
		case <-sig:
		case <-tick.C:
		case <-stop:
			return
		}
	}
}

func (r *reaper) reap() {
	for {
		r.mu.Lock()
		var st syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &st, syscall.WNOHANG, nil)
		if pid > 0 {
			if onExit, ok := r.watch[pid]; ok {
				delete(r.watch, pid)
				onExit(st)
			}
		}
		r.mu.Unlock()
		if pid <= 0 || err != nil {
			return
		}
	}
}
