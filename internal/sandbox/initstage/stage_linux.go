//go:build linux && amd64

package initstage

import (
	"encoding/json"
	"io"
	"math"
	"os"
	"os/signal"
	"path"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/internal/sandbox/supervisor"
)

// inProcess are the stages a jail's init can run in its own process (see
// Config.InProcess).
var inProcess = map[string]func(argv []string) int{
	supervisor.Stage: supervisor.Run,
}

// Main runs the stage that argv0 names, as the sandbox program
// (internal/host/sandboxbin) does when the host starts it under [StageInit] or
// [StageExec], and reports whether argv0 named one (it does not return if
// it did). The bounding set, securebits, capabilities, PDEATHSIG and
// no_new_privs are per thread: the caller must run on the main thread,
// locked to it from an init function, so that everything, the fork of the
// payload included, happens on that thread.
func Main(argv0 string) bool {
	switch argv0 {
	case StageInit:
		os.Exit(runInit())
	case StageExec:
		runExec()
	}
	return false
}

// runInit is pid 1 of the jail. It returns the exit code: the payload's
// status (128+signal if it was killed), or 126 when setup failed (the
// reason went to the host over FDStatus).
func runInit() int {
	status := os.NewFile(FDStatus, "status")
	report := func(m Status) {
		b, _ := json.Marshal(m)
		_, _ = status.Write(b)
		status.Close()
	}
	fail := func(err error) int {
		report(failMsg("setup", err))
		return 126
	}

	// The host releases us once we are in our cgroups.
	var b [1]byte
	if n, err := unix.Read(FDLifeline, b[:]); n != 1 {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return fail(stepErr("wait for the host", err))
	}
	// The host has put us into our cgroups only now, after the clone made
	// the cgroup namespace: a new one rooted here keeps the host's cgroup
	// names (which carry its pid) out of the payload's /proc/self/cgroup.
	if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
		return fail(stepErr("enter a cgroup namespace rooted at the jail's cgroups", err))
	}
	var c Config
	cf := os.NewFile(FDConfig, "config")
	if err := readJSON(cf, &c); err != nil {
		return fail(stepErr("read config", err))
	}
	cf.Close()
	// From here on nothing inherited leaks into the payload by accident
	// (FDLifeline, which init keeps to the end, included):
	// it gets exactly the descriptors startPayload lists.
	if err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fail(stepErr("mark descriptors close-on-exec", err))
	}

	if err := buildRoot(&c); err != nil {
		return fail(err)
	}
	// The rest of the setup is the host's plan (internal/protocol/jailplan's Lock:
	// names, loopback, rlimits, privileges, PDEATHSIG, no_new_privs, not
	// dumpable, seccomp, the working directory), the same a session forked
	// from a template runs.
	reports, err := c.Plan.Run()
	if err != nil {
		return fail(err)
	}
	// setresuid cleared PDEATHSIG, which the plan armed again after it:
	// make sure the host did not die before (getppid is 0 in a new pid
	// ns, so ask the lifeline pipe instead).
	if hostGone() {
		return 125
	}

	if c.InProcess != "" {
		code, ran := runInProcess(&c, reports, report)
		if !ran {
			return fail(stepErr("run the stage "+c.InProcess, unix.ENOENT))
		}
		return code
	}

	sigs := make(chan os.Signal, 64)
	signal.Notify(sigs, unix.SIGCHLD, unix.SIGTERM, unix.SIGINT, unix.SIGHUP)
	pid, err := startPayload(&c)
	if err != nil {
		return fail(err)
	}
	report(Status{Reports: reports})
	if c.Template {
		// The template's descriptors are its own: a template that dies
		// must close its control socket, which the host then sees.
		for i := 0; i < c.ExtraCount; i++ {
			unix.Close(c.ExtraFirst + i)
		}
	}
	code := reap(pid, sigs)
	if c.Template {
		// The sessions forked from a template are this init's children
		// once their first process is gone: the jail ends with the last.
		reapAll()
	}
	awaitReadBack()
	return code
}

// awaitReadBack keeps init, and with it the jail's mounts and network,
// until the host has read back what the setup achieved from its /proc
// (it writes one more byte on the lifeline when it has), so that a payload
// that ends at once leaves nothing unread; a host that is gone closes the
// lifeline instead.
func awaitReadBack() {
	var b [1]byte
	for {
		if _, err := unix.Read(FDLifeline, b[:]); err != unix.EINTR {
			break
		}
	}
	unix.Close(FDLifeline)
}

// reapAll reaps children until there are none.
func reapAll() {
	for {
		var ws unix.WaitStatus
		_, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return
		}
	}
}

// runInProcess turns init itself into a registered stage: setup is done
// and privileges are dropped, so what remains is to put Spec.ExtraFiles at
// fd 3, 4, ..., set the payload's environment and run. The stage is pid 1
// from then on and must reap its own children. RLIMIT_AS is not applied
// here: a Go runtime reserves far more address space than it uses, so the
// stage applies the limit to the processes it starts (the supervisor
// does so for its Python worker). It reports ran=false for an unknown
// stage.
func runInProcess(c *Config, reports map[string]int64, report func(Status)) (code int, ran bool) {
	fn := inProcess[c.InProcess]
	if fn == nil {
		return 0, false
	}
	report(Status{Reports: reports})
	unix.Close(FDLifeline)
	for i := 0; i < c.ExtraCount; i++ {
		if err := unix.Dup3(c.ExtraFirst+i, 3+i, 0); err != nil {
			return 126, true
		}
	}
	os.Clearenv()
	for _, kv := range c.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			_ = os.Setenv(k, v)
		}
	}
	return fn(c.Args), true
}

// hostGone reports whether the host end of the lifeline pipe is closed.
func hostGone() bool {
	fds := []unix.PollFd{{Fd: FDLifeline, Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0
}

// payloadPath resolves Spec.Args[0] inside the jail.
func payloadPath(c *Config) (string, error) {
	if c.Self {
		// The host passed its program as a descriptor, which still
		// reaches it after pivot_root. A copy above every descriptor the
		// payload gets keeps its number from being taken by one of those
		// before the exec reads it.
		fd, err := unix.FcntlInt(uintptr(c.SelfFD), unix.F_DUPFD_CLOEXEC, 3+c.ExtraCount+3)
		if err != nil {
			return "", stepErr("copy the host program's descriptor", err)
		}
		return "/proc/self/fd/" + strconv.Itoa(fd), nil
	}
	name := c.Args[0]
	if strings.Contains(name, "/") {
		return name, nil
	}
	pathEnv := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range c.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, dir := range splitList(pathEnv) {
		p := path.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && unix.Access(p, unix.X_OK) == nil {
			return p, nil
		}
	}
	return "", stepErr("find "+name+" in PATH", unix.ENOENT)
}

// splitList splits a PATH-like list, as filepath.SplitList does on Linux
// (whose package this one does not import, see the package documentation).
func splitList(list string) []string {
	if list == "" {
		return []string{}
	}
	return strings.Split(list, ":")
}

// startPayload forks the payload from this thread. With an address-space
// limit it goes through the launcher stage, which sets RLIMIT_AS and
// execs; exec failures come back over a close-on-exec pipe.
func startPayload(c *Config) (int, error) {
	path, err := payloadPath(c)
	if err != nil {
		return 0, err
	}
	files := []uintptr{0, 1, 2}
	for i := 0; i < c.ExtraCount; i++ {
		files = append(files, uintptr(c.ExtraFirst+i))
	}
	attr := &syscall.ProcAttr{Env: c.Env, Files: files, Sys: &syscall.SysProcAttr{}}
	if c.AddressSpace < 0 || limitSelfAS(uint64(c.AddressSpace)) {
		pid, err := syscall.ForkExec(path, c.Args, attr)
		return pid, stepErr("exec "+path, err)
	}
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return 0, stepErr("pipe", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return 0, stepErr("pipe", err)
	}
	n := len(files)
	attr.Files = append(files, cfgR.Fd(), errW.Fd())
	if c.Self {
		// The launcher execs the host program through its own copy of
		// the descriptor, which it marks close-on-exec with the others.
		fd, _ := strconv.Atoi(strings.TrimPrefix(path, "/proc/self/fd/"))
		attr.Files = append(attr.Files, uintptr(fd))
		path = "/proc/self/fd/" + strconv.Itoa(n+2)
	}
	attr.Env = []string{}
	pid, err := syscall.ForkExec("/proc/self/exe", []string{StageExec, strconv.Itoa(n)}, attr)
	cfgR.Close()
	errW.Close()
	defer errR.Close()
	if err != nil {
		cfgW.Close()
		return 0, stepErr("start the payload launcher", err)
	}
	werr := json.NewEncoder(cfgW).Encode(execConfig{Path: path, Args: c.Args, Env: c.Env, AddressSpace: c.AddressSpace})
	cfgW.Close()
	msg, _ := io.ReadAll(errR)
	if len(msg) == 0 && werr == nil {
		return pid, nil
	}
	var ws unix.WaitStatus
	_, _ = unix.Wait4(pid, &ws, 0, nil)
	var m Status
	if len(msg) == 0 || json.Unmarshal(msg, &m) != nil || m.Op == "" {
		return 0, stepErr("start the payload launcher", io.ErrUnexpectedEOF)
	}
	return 0, m.err()
}

// initASHeadroom is the address space init keeps free for itself when it
// applies the payload's RLIMIT_AS to itself.
const initASHeadroom = 256 << 20

// limitSelfAS applies RLIMIT_AS to init itself, to be inherited by the
// payload it forks next, when the limit leaves init's Go runtime ample
// headroom above what it has mapped already (init allocates next to nothing
// once setup is done). Otherwise (a small limit, or the race detector's
// huge shadow mappings) it returns false and the launcher stage applies the
// limit instead, at the cost of one more exec.
func limitSelfAS(limit uint64) bool {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return false
	}
	pages, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil || pages*uint64(os.Getpagesize())+initASHeadroom > limit {
		return false
	}
	var cur syscall.Rlimit
	if syscall.Getrlimit(unix.RLIMIT_AS, &cur) != nil {
		return false
	}
	v := min(limit, cur.Max)
	return syscall.Setrlimit(unix.RLIMIT_AS, &syscall.Rlimit{Cur: v, Max: v}) == nil
}

// runExec is the payload launcher: it applies RLIMIT_AS and execs the
// payload, or reports why it could not.
func runExec() {
	// Once RLIMIT_AS is set this process must map no more memory (a race
	// build's shadow alone is past any limit). But the runtime samples the
	// first allocation on each P for the memory profile, and maps the
	// profiler's table at its first sample: a system call that hands this
	// thread another P just before Exec allocates would have it map the
	// table under the limit, and die. One P and no profiling; the switch
	// takes its one last sample on the allocations below, before the
	// limit.
	runtime.GOMAXPROCS(1)
	runtime.MemProfileRate = 0
	n, err := strconv.Atoi(os.Args[len(os.Args)-1])
	if err != nil || n < 3 {
		os.Exit(127)
	}
	errW := os.NewFile(uintptr(n+1), "launcher-status")
	fail := func(op string, err error) {
		b, _ := json.Marshal(failMsg(op, stepErr(op, err)))
		_, _ = errW.Write(b)
		os.Exit(127)
	}
	var ec execConfig
	f := os.NewFile(uintptr(n), "launcher-config")
	if err := readJSON(f, &ec); err != nil {
		fail("read launcher config", err)
	}
	f.Close()
	if err := unix.CloseRange(uint(n), math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err != nil {
		fail("mark descriptors close-on-exec", err)
	}
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(unix.RLIMIT_AS, &cur); err != nil {
		fail("get RLIMIT_AS", err)
	}
	// Under the limit nothing may be allocated: the heap may need a new
	// span, which the runtime maps, past the limit, and dies. So the exec's
	// arguments and the report of its failure are made first, and the exec
	// and the report are bare system calls.
	path, err := syscall.BytePtrFromString(ec.Path)
	if err != nil {
		fail("exec "+ec.Path, err)
	}
	argv, err := syscall.SlicePtrFromStrings(ec.Args)
	if err != nil {
		fail("exec "+ec.Path, err)
	}
	envv, err := syscall.SlicePtrFromStrings(ec.Env)
	if err != nil {
		fail("exec "+ec.Path, err)
	}
	op, _ := json.Marshal("exec " + ec.Path)
	const msg = `,"Msg":"the exec failed"}`
	report := make([]byte, 0, len(op)+64+len(msg))
	report = append(append(append(report, `{"Op":`...), op...), `,"Errno":`...)
	v := min(uint64(ec.AddressSpace), cur.Max)
	if err := syscall.Setrlimit(unix.RLIMIT_AS, &syscall.Rlimit{Cur: v, Max: v}); err != nil {
		fail("set RLIMIT_AS", err)
	}
	_, _, errno := syscall.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(path)),
		uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])))
	report = append(strconv.AppendUint(report, uint64(errno), 10), msg...)
	_, _, _ = syscall.RawSyscall(unix.SYS_WRITE, uintptr(n+1), uintptr(unsafe.Pointer(&report[0])), uintptr(len(report)))
	_, _, _ = syscall.RawSyscall(unix.SYS_EXIT_GROUP, 127, 0, 0)
}

// reap waits for the payload while reaping every orphan that the pid
// namespace hands to pid 1, and forwards SIGTERM, SIGINT and SIGHUP.
func reap(pid int, sigs <-chan os.Signal) int {
	for {
		for {
			var ws unix.WaitStatus
			wpid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if err == unix.EINTR {
				continue
			}
			if err != nil || wpid <= 0 {
				break
			}
			if wpid == pid {
				if ws.Signaled() {
					return 128 + int(ws.Signal())
				}
				return ws.ExitStatus()
			}
		}
		if s := <-sigs; s != unix.SIGCHLD {
			_ = unix.Kill(pid, s.(syscall.Signal))
		}
	}
}
