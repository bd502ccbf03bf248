//go:build linux

package supervisor

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A sandbox's processes are stopped in two steps so that none can escape
// by forking: first every one of them is frozen with SIGSTOP (a stopped
// process cannot fork), then the frozen ones are killed, or let go. A fork
// bomb is stopped that way whatever the load, where killing round after
// round races the processes that fork meanwhile, and loses when the
// machine is busy.
//
// The init of a pid namespace (the supervisor of a jailed session) freezes
// with one kill(-1, SIGSTOP), which reaches every other process of the
// namespace at once, a fork in progress included. Elsewhere (a sandbox
// server in a container, the unsandboxed backend) the descendants are
// found by walking the children files of /proc from the root, each one
// stopped as soon as it is found, round after round until a round finds
// every one of them stopped: a process that keeps forking and exiting
// moves faster than a scan of the whole of /proc, but not than this walk.

// Bounds on the rounds of freezing and killing.
const (
	freezeRounds = 200
	killRounds   = 200
)

// clockTick is the unit of a process's start time in /proc/PID/stat:
// USER_HZ, 100 on every Linux architecture.
const clockTick = 10 * time.Millisecond

// proc is a process as its /proc/PID/stat shows it.
type proc struct {
	ppid  int
	state byte   // R, S, D, T, t, Z, X...
	start uint64 // clock ticks since boot
}

func (p proc) stopped() bool { return p.state == 'T' || p.state == 't' }
func (p proc) dead() bool    { return p.state == 'Z' || p.state == 'X' }

// readStat parses /proc/PID/stat: "pid (comm) state ppid ...", with the
// start time the 22nd field. comm may hold spaces and parentheses.
func readStat(pid int, buf []byte) (proc, bool) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return proc{}, false
	}
	n, err := unix.Read(fd, buf)
	unix.Close(fd)
	if err != nil || n <= 0 {
		return proc{}, false
	}
	stat := buf[:n]
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return proc{}, false
	}
	f := bytes.Fields(stat[i+1:])
	// f[0] is the state (field 3), f[1] the ppid (4), f[19] the start (22).
	if len(f) < 20 || len(f[0]) != 1 {
		return proc{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	start, err2 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil {
		return proc{}, false
	}
	return proc{ppid: ppid, state: f[0][0], start: start}, true
}

// children appends to out the children of every task of pid.
func children(pid int, out []int, buf []byte) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	for _, t := range tasks {
		fd, err := unix.Open(dir+t.Name()+"/children", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var data []byte
		for {
			n, err := unix.Read(fd, buf)
			if n <= 0 || err != nil {
				break
			}
			data = append(data, buf[:n]...)
		}
		unix.Close(fd)
		for _, f := range bytes.Fields(data) {
			if c, err := strconv.Atoi(string(f)); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// walk calls visit for every descendant of root, parents before their
// children, as the children files show them; visit may signal each one as
// it comes. It returns the processes it visited with their stat.
func walk(root int, visit func(pid int, p proc)) map[int]proc {
	buf := make([]byte, 4096)
	seen := map[int]proc{}
	queue := children(root, nil, buf)
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if _, ok := seen[pid]; ok {
			continue
		}
		p, ok := readStat(pid, buf)
		if !ok {
			continue
		}
		seen[pid] = p
		if visit != nil {
			visit(pid, p)
		}
		if !p.dead() {
			queue = children(pid, queue, buf)
		}
	}
	return seen
}

// Descendants lists the live descendants of pid. Zombies are left out:
// they are already dead and wait for their reaper.
func Descendants(pid int) []int {
	var out []int
	for k, p := range walk(pid, nil) {
		if !p.dead() {
			out = append(out, k)
		}
	}
	return out
}

// stopKey identifies a process across pid reuse.
type stopKey struct {
	pid   int
	start uint64
}

// isInit reports whether root is this process and the init of its pid
// namespace: then kill(-1) reaches exactly the other processes of the
// sandbox.
func isInit(root int) bool { return root == 1 && os.Getpid() == 1 }

// Freeze stops every descendant of root but spare (the worker, which is
// to stop its block in place, or 0) with SIGSTOP, and returns once every
// one it finds is stopped, or after freezeRounds rounds. root is the
// process that reaps the sandbox's orphans (a child subreaper, or the
// init of the sandbox's pid namespace), so that they are among its
// descendants.
func Freeze(root, spare int) {
	if isInit(root) {
		_ = syscall.Kill(-1, syscall.SIGSTOP)
		if spare > 0 {
			_ = syscall.Kill(spare, syscall.SIGCONT)
		}
	}
	sent := map[stopKey]bool{}
	for round := range freezeRounds {
		settled := true
		walk(root, func(pid int, p proc) {
			if pid == spare || p.dead() {
				return
			}
			key := stopKey{pid, p.start}
			if !sent[key] {
				_ = syscall.Kill(pid, syscall.SIGSTOP)
				sent[key] = true
				settled = false
			} else if !p.stopped() {
				settled = false // the signal is on its way
			}
		})
		if settled {
			return
		}
		if round > 0 {
			time.Sleep(time.Duration(min(round, 10)) * 100 * time.Microsecond)
		}
	}
}

// Settle ends the processes of a block that was stopped in place: it
// freezes root's descendants but the worker spare, kills those that
// started at or after since (a time on CLOCK_BOOTTIME, as [BootTime]
// reads it: the block's start) and lets the others, started by earlier
// blocks, run on. It returns how many it killed.
func Settle(root, spare int, since time.Duration) int {
	Freeze(root, spare)
	first := uint64(since / clockTick)
	killed := map[stopKey]bool{}
	for round := range killRounds {
		late := 0
		walk(root, func(pid int, p proc) {
			if pid != spare && !p.dead() && p.start >= first {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				killed[stopKey{pid, p.start}] = true
				late++
			}
		})
		if late == 0 {
			break
		}
		time.Sleep(time.Duration(min(round+1, 10)) * time.Millisecond)
	}
	walk(root, func(pid int, p proc) {
		if pid != spare && p.stopped() {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	})
	return len(killed)
}

// KillTree SIGKILLs every descendant of pid, frozen first so that none
// forks meanwhile, and returns once none is left (or after killRounds
// rounds, should one be stuck in the kernel). The zombies it leaves are
// the reaper's.
func KillTree(pid int) {
	if isInit(pid) {
		_ = syscall.Kill(-1, syscall.SIGKILL)
	} else {
		Freeze(pid, 0)
	}
	for round := range killRounds {
		kids := Descendants(pid)
		if len(kids) == 0 {
			return
		}
		for _, k := range kids {
			_ = syscall.Kill(k, syscall.SIGKILL)
		}
		time.Sleep(time.Duration(min(round+1, 10)) * time.Millisecond)
	}
}

// BootTime is the time on CLOCK_BOOTTIME, the clock of a process's start
// time in /proc.
func BootTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
