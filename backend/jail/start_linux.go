//go:build linux && amd64

package jail

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/internal/both/syscallpolicy"
	"github.com/adk-codemode/codemode/internal/host/sandboxbin"
	"github.com/adk-codemode/codemode/internal/protocol/jailplan"
	"github.com/adk-codemode/codemode/internal/sandbox/initstage"
)

// Cmd is a running jail. Its methods may be called from any goroutine;
// Wait returns the same result to every caller.
type Cmd struct {
	cmd      *exec.Cmd
	enf      Enforcement
	cg       *cgroupSet
	lifeline *os.File // host end; its closing tells the jail the host is gone
	trees    []*os.File

	// A session forked from a template (cmd is nil): its pid 1, which is
	// not our child, through a pidfd that becomes readable when it exits.
	pidfd  int
	pid    int
	exited chan struct{}

	waitOnce sync.Once
	waitErr  error
	mu       sync.Mutex // guards usage and cgErr, set by Wait
	usage    Usage
	cgErr    error // failure to remove the jail's cgroups
}

// Start builds a jail from cfg and starts spec in it. It returns once the
// payload has been exec'd, or with the precise reason the setup failed
// (a [*SetupError], or an error wrapping [ErrUnsupported]). Cancelling ctx
// kills the whole jail. The caller must call [Cmd.Wait].
func Start(ctx context.Context, cfg Config, spec Spec) (*Cmd, error) {
	if err := supported(); err != nil {
		return nil, err
	}
	if len(spec.Args) == 0 {
		return nil, errors.New("jail: Spec.Args is empty")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	filesBytes, err := checkFiles(cfg.Files)
	if err != nil {
		return nil, err
	}
	rootless := os.Geteuid() != 0
	if !rootless {
		if err := checkHostIDs(cfg); err != nil {
			return nil, err
		}
		if spec.Self && spec.inProcess == "" {
			if err := checkExecutable(); err != nil {
				return nil, err
			}
		}
	}
	stage, err := sandboxbin.Path()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}

	ic := &initstage.Config{
		Rootless: rootless, PayloadUID: PayloadID, PayloadGID: PayloadID,
		WorkspaceBytes: cfg.WorkspaceBytes, TmpBytes: cfg.TmpBytes,
		Files: cfg.Files, FilesBytes: filesBytes,
		AddressSpace: cfg.AddressSpaceBytes,
		Args:         spec.Args, Self: spec.Self, InProcess: spec.inProcess, Template: spec.template, Env: spec.Env,
	}
	if ic.Env == nil {
		ic.Env = []string{}
	}
	if rootless {
		ic.PayloadUID, ic.PayloadGID = 0, 0
	}

	c := &Cmd{}
	ok := false
	defer func() {
		if !ok {
			c.closeFiles()
		}
	}()

	// Host trees to bind: the interpreter prefix and ExtraReadOnly. As
	// root, clone them here with open_tree, so that paths the setup uid
	// cannot traverse (a 0700 home) still work; rootless, the setup uid is
	// the caller's, so the jail clones them itself.
	var targets []string
	if ip, err := resolvePython(cfg.Python); err == nil && ip.prefix != "" {
		targets = append(targets, ip.prefix)
	} else if err != nil && cfg.Python != "" {
		return nil, err
	}
	for _, p := range cfg.ExtraReadOnly {
		if err := checkExtraPath(p); err != nil {
			return nil, err
		}
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("jail: ExtraReadOnly: %w", err)
		}
		if p != "/usr" && !hasPrefixDir(p, "/usr") {
			targets = append(targets, p)
		}
	}
	extraFiles := []*os.File{}
	for _, t := range targets {
		tm := initstage.TreeMount{Target: t}
		if !rootless {
			fd, err := unix.OpenTree(unix.AT_FDCWD, t, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
			if err != nil {
				if err == unix.ENOSYS {
					return nil, fmt.Errorf("%w (open_tree: %w)", ErrUnsupported, err)
				}
				return nil, fmt.Errorf("jail: clone %s: %w", t, err)
			}
			f := os.NewFile(uintptr(fd), t)
			c.trees = append(c.trees, f)
			tm.FD = initstage.FDFirstPass + len(extraFiles)
			extraFiles = append(extraFiles, f)
		}
		ic.Trees = append(ic.Trees, tm)
	}
	if spec.Self && spec.inProcess == "" {
		// The init is the sandbox program: the host program reaches the
		// jail as a descriptor, which it execs as the payload.
		fd, err := unix.Open("/proc/self/exe", unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("jail: open the running executable: %w", err)
		}
		f := os.NewFile(uintptr(fd), "host-executable")
		c.trees = append(c.trees, f)
		ic.SelfFD = initstage.FDFirstPass + len(extraFiles)
		extraFiles = append(extraFiles, f)
	}
	ic.ExtraFirst = initstage.FDFirstPass + len(extraFiles)
	ic.ExtraCount = len(spec.ExtraFiles)
	extraFiles = append(extraFiles, spec.ExtraFiles...)

	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer cfgW.Close()
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		cfgR.Close()
		return nil, err
	}
	c.lifeline = lifeW
	statR, statW, err := os.Pipe()
	if err != nil {
		cfgR.Close()
		lifeR.Close()
		return nil, err
	}
	defer statR.Close()

	cmd := exec.CommandContext(ctx, stage)
	cmd.Args = []string{initstage.StageInit}
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.Stdin, spec.Stdout, spec.Stderr
	cmd.ExtraFiles = append([]*os.File{cfgR, lifeR, statW}, extraFiles...)
	cmd.SysProcAttr = sysProcAttr(rootless, cfg)
	c.cmd = cmd

	cg := &cgroupSet{}
	if !rootless || cgroupsWritable() {
		cg = newCgroups(cfg.MemoryBytes, cfg.Processes)
	}
	c.cg = cg
	lock := jailplan.Lock{
		Names: true,
		Limits: jailplan.Limits{
			CPU: uint64(cfg.CPUSeconds), FileSize: uint64(cfg.FileSizeBytes), OpenFiles: uint64(cfg.OpenFiles), Processes: uint64(cfg.Processes),
		},
		Rootless: rootless, SetIDs: !rootless, UID: PayloadID, GID: PayloadID,
		ParentDeath: true, Dir: spec.Dir,
	}
	if cg.pids != nil {
		// Let the pids cgroup, which counts refused forks, trip first;
		// RLIMIT_NPROC stays as the backstop.
		lock.Limits.Processes += 16
	}
	if spec.template && rootless {
		lock.Privileges = jailplan.KeepSetfcap
	}
	if lock.Filter, err = syscallpolicy.FilterBytes(spec.template); err == nil {
		ic.Plan, err = lock.Build()
	}
	if err != nil {
		_ = cg.remove()
		return nil, fmt.Errorf("jail: the setup plan: %w", err)
	}

	err = cmd.Start()
	cfgR.Close()
	lifeR.Close()
	statW.Close()
	if err != nil {
		_ = cg.remove()
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) ||
			errors.Is(err, syscall.EACCES) && rootless {
			return nil, fmt.Errorf("%w: cannot create namespaces: %w", ErrUnsupported, err)
		}
		return nil, fmt.Errorf("jail: start: %w", err)
	}
	abort := func(err error) (*Cmd, error) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = cg.remove()
		return nil, err
	}
	if err := cg.attach(cmd.Process.Pid); err != nil {
		return abort(err)
	}
	if _, err := lifeW.Write([]byte{1}); err != nil {
		return abort(fmt.Errorf("jail: release init: %w", err))
	}
	werr := json.NewEncoder(cfgW).Encode(ic)
	cfgW.Close()
	data, rerr := io.ReadAll(statR)
	var msg initstage.Status
	if rerr != nil || len(data) == 0 || json.Unmarshal(data, &msg) != nil {
		_ = cmd.Process.Kill()
		waitErr := cmd.Wait()
		cg.collect()
		_ = cg.remove()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		err := fmt.Errorf("jail: init exited before reporting: %w", waitErr)
		if werr != nil {
			err = fmt.Errorf("jail: init exited before reporting (sending it the config failed: %w): %w", werr, waitErr)
		}
		// The init itself, a Go program, needs a few tasks and some
		// memory: a limit too small stops it before it can say so.
		return nil, limitHit(err, Usage{OOMKills: cg.oomKills, PidsLimitHits: cg.pidsHit}, cfg)
	}
	if err := setupErr(&msg); err != nil {
		_ = cmd.Wait()
		_ = cg.remove()
		return nil, err
	}
	if msg.Reports == nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = cg.remove()
		return nil, errors.New("jail: init reported no setup results")
	}
	c.enf = readBack(cmd.Process.Pid, []int{os.Getpid()}, msg.Reports, jailplan.Securebits(rootless, lock.Privileges))
	// Init waits for this byte before it exits (initstage's
	// awaitReadBack), so that the read-back never finds it gone; an init
	// that runs its stage in its own process has closed its end already.
	_, _ = lifeW.Write([]byte{1})
	if cfg.AddressSpaceBytes >= 0 && c.enf.Rlimits != nil {
		c.enf.Rlimits["AS"] = jailplan.EffectiveLimit(unix.RLIMIT_AS, uint64(cfg.AddressSpaceBytes))
	}
	c.enf.Rootless = rootless
	c.enf.UIDMap = uidMapString(rootless, cfg)
	cg.enforce(&c.enf)
	for _, f := range c.trees {
		f.Close()
	}
	c.trees = nil
	ok = true
	return c, nil
}

// setupErr is the setup failure that the init stage reports, or nil.
func setupErr(m *initstage.Status) error {
	if m.Op == "" {
		return nil
	}
	var err error = errors.New(m.Msg)
	if m.Errno != 0 {
		err = syscall.Errno(m.Errno)
	}
	return &SetupError{Op: m.Op, Err: err}
}

func sysProcAttr(rootless bool, cfg Config) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
			syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP,
		Pdeathsig: syscall.SIGKILL,
		Setsid:    true,
	}
	if rootless {
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
		a.Credential = &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true}
		return a
	}
	a.UidMappings = []syscall.SysProcIDMap{
		{ContainerID: 0, HostID: cfg.SetupHostID, Size: 1},
		{ContainerID: PayloadID, HostID: cfg.PayloadHostID, Size: 1},
	}
	a.GidMappings = a.UidMappings
	a.GidMappingsEnableSetgroups = true
	// An empty Groups clears the host's supplementary groups (a root
	// caller's group 0 would otherwise open root:root 0640 files).
	a.Credential = &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}
	return a
}

func uidMapString(rootless bool, cfg Config) string {
	if rootless {
		return fmt.Sprintf("inside 0→host %d (setup and payload, no capabilities)", os.Getuid())
	}
	return fmt.Sprintf("inside 0→host %d (setup), inside %d→host %d (payload)",
		cfg.SetupHostID, PayloadID, cfg.PayloadHostID)
}

// checkExecutable makes sure the jail's setup uid may exec the host
// binary (Spec.Self): it runs as an unprivileged host uid, so the file
// needs o+x (it is passed as a descriptor, which skips the directory
// search, so a 0700 directory is fine).
func checkExecutable() error {
	fi, err := os.Stat("/proc/self/exe")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	if fi.Mode().Perm()&0o001 == 0 {
		return fmt.Errorf("jail: the running executable has mode %v; it must be executable by others (o+x) "+
			"because the jail re-executes it as an unprivileged uid", fi.Mode().Perm())
	}
	return nil
}

// cgroupsWritable reports whether a rootless caller may create cgroups
// (a delegated v2 subtree).
func cgroupsWritable() bool {
	for _, dir := range cgroupHierarchies() {
		if unix.Access(dir, unix.W_OK) == nil {
			return true
		}
	}
	return false
}

// supported checks for user namespaces before anything is started.
func supported() error {
	if _, err := os.Stat("/proc/self/ns/user"); err != nil {
		return fmt.Errorf("%w: no user namespace support (%w)", ErrUnsupported, err)
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && string(b) == "0\n" {
		return fmt.Errorf("%w: user.max_user_namespaces is 0", ErrUnsupported)
	}
	if os.Geteuid() != 0 {
		if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && string(b) == "0\n" {
			return fmt.Errorf("%w: kernel.unprivileged_userns_clone is 0", ErrUnsupported)
		}
	}
	return nil
}

func hasPrefixDir(p, dir string) bool {
	return len(p) > len(dir) && p[:len(dir)] == dir && p[len(dir)] == '/'
}

func (c *Cmd) closeFiles() {
	for _, f := range c.trees {
		f.Close()
	}
	c.trees = nil
	if c.lifeline != nil {
		c.lifeline.Close()
	}
}

// Wait waits for the jail's pid 1 to exit. When it returns every process
// of the jail is dead and its cgroups are removed. The error is as from
// [os/exec.Cmd.Wait]: an [*exec.ExitError] whose exit code is the
// payload's (128+n if the payload was killed by signal n, so 137 for an
// OOM kill; see [Cmd.Usage]).
func (c *Cmd) Wait() error {
	c.waitOnce.Do(func() {
		if c.cmd == nil {
			<-c.exited
			unix.Close(c.pidfd)
		} else {
			c.waitErr = c.cmd.Wait()
		}
		c.cg.collect()
		cgErr := c.cg.remove()
		if cgErr != nil && c.waitErr == nil {
			c.waitErr = cgErr
		}
		c.closeFiles()
		c.mu.Lock()
		c.usage = Usage{OOMKills: c.cg.oomKills, MemoryPeakBytes: c.cg.memPeak, PidsLimitHits: c.cg.pidsHit}
		c.cgErr = cgErr
		c.mu.Unlock()
	})
	return c.waitErr
}

// Kill sends SIGKILL to the jail's pid 1; the kernel then kills every
// process in the jail's pid namespace.
func (c *Cmd) Kill() error {
	if c.cmd == nil {
		select {
		case <-c.exited:
			return os.ErrProcessDone
		default:
		}
		return unix.PidfdSendSignal(c.pidfd, unix.SIGKILL, nil, 0)
	}
	return c.cmd.Process.Kill()
}

// Pid returns the host pid of the jail's pid 1.
func (c *Cmd) Pid() int {
	if c.cmd == nil {
		return c.pid
	}
	return c.cmd.Process.Pid
}

// Enforced reports which limits are really enforced for this jail.
func (c *Cmd) Enforced() Enforcement {
	e := c.enf
	e.Rlimits = maps.Clone(e.Rlimits)
	return e
}

// Usage reports OOM kills, the memory peak and refused forks as counted by
// the jail's cgroups. It is complete after Wait returns.
func (c *Cmd) Usage() Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.usage
}

// memoryKills reads, while the jail runs, what its memory cgroup's limit
// has killed and the limit.
func (c *Cmd) memoryKills() (kills int, limit int64, ok bool) {
	if c.cg == nil {
		return 0, 0, false
	}
	return c.cg.memoryKills()
}

// cleanupErr is the failure to remove the jail's cgroups, once Wait has
// returned.
func (c *Cmd) cleanupErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cgErr
}
