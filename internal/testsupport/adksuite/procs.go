package adksuite

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// proc is what the tests read of a process from /proc.
type proc struct {
	ppid        int
	argv0, comm string
}

// procs reads every live process of the host's pid namespace. A zombie
// is left out: it holds nothing but its pid until its parent reaps it (a
// forked session's pid 1 is reaped by its template's jail, after the
// session's Close has returned).
func procs() map[int]proc {
	out := map[int]proc{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		out[pid] = proc{
			ppid:  ppid,
			argv0: filepath.Base(string(bytes.SplitN(cmd, []byte{0}, 2)[0])),
			comm:  strings.TrimSpace(string(comm)),
		}
	}
	return out
}

// descends reports whether pid is a descendant of this process.
func descends(all map[int]proc, pid int) bool {
	self := os.Getpid()
	for p, n := all[pid].ppid, 0; p > 1 && n < 64; p, n = all[p].ppid, n+1 {
		if p == self {
			return true
		}
	}
	return false
}

// templateOwned reports whether pid belongs to a jail's template rather
// than to a session: the template (named codemode-zygote), a blank
// session it forked ahead (codemode-spare), or the init of the template's
// own jail. The default jail.Backend keeps these while sessions come and
// go.
func templateOwned(all map[int]proc, pid int) bool {
	switch all[pid].comm {
	case "codemode-zygote", "codemode-spare":
		return true
	}
	if all[pid].argv0 != "codemode-jail-init" {
		return false
	}
	for child, p := range all {
		if p.ppid == pid && templateOwned(all, child) {
			return true
		}
	}
	return false
}

// SessionInits lists the host pids of the sessions this process has open:
// a cold jail's init, a supervisor (a sandbox server's, or the pid 1 of a
// session forked from a template once it is set up: the host program
// under the supervisor's argv[0]), or the pid 1 of a forked session still
// being set up (named codemode-forked, as the first worker it forks is).
// Templates are not sessions.
func SessionInits() []int {
	all := procs()
	var out []int
	for pid, p := range all {
		if p.argv0 != "codemode-jail-init" && p.argv0 != "codemode-supervisor" && p.comm != "codemode-forked" {
			continue
		}
		if parent := all[p.ppid]; p.comm == "codemode-forked" &&
			(parent.comm == "codemode-forked" || parent.argv0 == "codemode-supervisor") {
			continue // a worker: its session's pid 1 is listed
		}
		if descends(all, pid) && !templateOwned(all, pid) {
			out = append(out, pid)
		}
	}
	return out
}

// SandboxProcesses describes the sessions this process has open (see
// SessionInits).
func SandboxProcesses() []string {
	all := procs()
	var out []string
	for _, pid := range SessionInits() {
		name := all[pid].argv0
		if all[pid].comm == "codemode-forked" || all[all[pid].ppid].argv0 == "codemode-jail-init" {
			name = "forked session" // its parent is its template's jail init
		}
		out = append(out, fmt.Sprintf("%d (%s)", pid, name))
	}
	return out
}

// OfTemplate reports whether pid belongs to a jail's template rather than
// to a session (see templateOwned).
func OfTemplate(pid int) bool { return templateOwned(procs(), pid) }
