//go:build linux && amd64

package jail

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/adk-codemode/codemode/internal/protocol/jailplan"
)

// namespaces are the namespace kinds a jail has of its own, as
// /proc/<pid>/ns names them.
var namespaces = []string{"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"}

// limitNames maps /proc/<pid>/limits' rows to Enforcement.Rlimits' keys.
var limitNames = map[string]string{
	"Max core file size": "CORE",
	"Max cpu time":       "CPU",
	"Max file size":      "FSIZE",
	"Max open files":     "NOFILE",
	"Max processes":      "NPROC",
}

// readBack is the one check of what a jail's setup achieved, the same on
// both start paths: what the kernel shows the host of the jail's first
// process (pid, in the host's pid namespace) in /proc, and what only the
// jail can see (its ids and securebits), which its setup plan reported.
// The jail must share no namespace with the processes in outside (the host,
// and a forked session's template), and must have a seccomp filter of its
// own: more filters stacked than each of them has. Whatever cannot be read
// is reported as not enforced. no_new_privs, which a forked session
// inherits from its template, is what the kernel shows; that the session
// set it itself only its plan says (a plan stops at a step that fails).
func readBack(pid int, outside []int, reports map[string]int64, securebits int64) Enforcement {
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	var e Enforcement
	own := map[string]bool{}
	for _, ns := range namespaces {
		id, err := os.Readlink(dir + "ns/" + ns)
		own[ns] = err == nil
		for _, o := range outside {
			if other, err := os.Readlink("/proc/" + strconv.Itoa(o) + "/ns/" + ns); err != nil || other == id {
				own[ns] = false
			}
		}
	}
	status := procStatus(dir + "status")
	nspid := strings.Fields(status["NSpid"])
	e.UserNS, e.MountNS, e.NetNS, e.IPCNS, e.CgroupNS = own["user"], own["mnt"], own["net"], own["ipc"], own["cgroup"]
	e.PIDNS = own["pid"] && len(nspid) > 1 && nspid[len(nspid)-1] == "1"
	// The hostname is the plan's: its UTS namespace is what can be seen.
	e.UTSNS = own["uts"]

	e.CapsDropped = status != nil
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if v, err := strconv.ParseUint(status[k], 16, 64); err != nil || v != 0 {
			e.CapsDropped = false
		}
	}
	e.NoNewPrivs = status["NoNewPrivs"] == "1"
	e.Seccomp = status["Seccomp"] == "2" && ownFilter(status, outside)
	sb, ok := reports[jailplan.ReportSecurebits]
	e.Securebits = ok && sb >= 0 && sb&securebits == securebits
	e.ReadOnlyRoot = readOnly(dir+"mountinfo", "/", "/usr", "/etc")
	e.Loopback = loopbackOnly(dir)
	e.Rlimits = procLimits(dir + "limits")
	e.PayloadUID, e.PayloadGID = int(reports[jailplan.ReportUID]), int(reports[jailplan.ReportGID])
	return e
}

// ownFilter reports whether the process whose status is st has more
// seccomp filters stacked than each process in outside: one of its own,
// not only those it inherited (a forked session inherits its template's).
// A kernel before 5.9 does not count filters: then only the mode is read.
func ownFilter(st map[string]string, outside []int) bool {
	n, err := strconv.Atoi(st["Seccomp_filters"])
	if err != nil {
		return st["Seccomp_filters"] == ""
	}
	for _, o := range outside {
		other, err := strconv.Atoi(procStatus("/proc/" + strconv.Itoa(o) + "/status")["Seccomp_filters"])
		if err != nil || other >= n {
			return false
		}
	}
	return true
}

// procStatus reads /proc/<pid>/status as a map, or nil.
func procStatus(path string) map[string]string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	st := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			st[k] = strings.TrimSpace(v)
		}
	}
	return st
}

// readOnly reports whether each path lies on a read-only mount, as the
// jail sees its mounts: the mount whose mount point is the longest prefix
// of the path has "ro" among its per-mount options.
func readOnly(mountinfo string, paths ...string) bool {
	b, err := os.ReadFile(mountinfo)
	if err != nil {
		return false
	}
	type mnt struct {
		point string
		ro    bool
	}
	var mounts []mnt
	for _, l := range strings.Split(string(b), "\n") {
		// id parent major:minor root mount-point options ...
		f := strings.Fields(l)
		if len(f) < 6 {
			continue
		}
		opts := strings.Split(f[5], ",")
		mounts = append(mounts, mnt{point: unescapeMountPath(f[4]), ro: len(opts) > 0 && opts[0] == "ro"})
	}
	for _, p := range paths {
		best, ro := -1, false
		for _, m := range mounts { // later mounts stack over earlier ones
			if (m.point == "/" || p == m.point || strings.HasPrefix(p, m.point+"/")) && len(m.point) >= best {
				best, ro = len(m.point), m.ro
			}
		}
		if !ro {
			return false
		}
	}
	return true
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// loopbackOnly reports whether the jail's network namespace has lo and
// no other interface, and lo is up: the kernel adds the local routes of
// 127.0.0.0/8 when lo comes up.
func loopbackOnly(dir string) bool {
	dev, err := os.ReadFile(dir + "net/dev")
	if err != nil {
		return false
	}
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(dev))
	for sc.Scan() {
		if name, _, ok := strings.Cut(sc.Text(), ":"); ok {
			names = append(names, strings.TrimSpace(name))
		}
	}
	if len(names) != 1 || names[0] != "lo" {
		return false
	}
	fib, err := os.ReadFile(dir + "net/fib_trie")
	return err == nil && bytes.Contains(fib, []byte("127.0.0.1\n")) && bytes.Contains(fib, []byte("/32 host LOCAL"))
}

// procLimits reads the soft limits of /proc/<pid>/limits that
// Enforcement.Rlimits reports.
func procLimits(path string) map[string]uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	out := map[string]uint64{}
	for _, l := range strings.Split(string(b), "\n") {
		// "%-25s %-20s %-20s %-10s": name, soft, hard, units.
		if len(l) < 26 {
			continue
		}
		key, ok := limitNames[strings.TrimSpace(l[:25])]
		f := strings.Fields(l[25:])
		if !ok || len(f) < 2 {
			continue
		}
		if f[0] == "unlimited" {
			out[key] = math.MaxUint64
		} else if v, err := strconv.ParseUint(f[0], 10, 64); err == nil {
			out[key] = v
		}
	}
	return out
}
