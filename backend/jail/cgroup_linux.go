//go:build linux && amd64

package jail

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// cgroupNamePrefix starts the name of every cgroup the package creates:
// codemode-jail-<host pid>-<counter>.
const cgroupNamePrefix = "codemode-jail-"

var cgroupCounter atomic.Uint64

// cgroupDir is one created cgroup directory.
type cgroupDir struct {
	path    string
	version string // "v1" or "v2"
}

// cgroupSet holds the cgroups of one jail. Its zero value enforces nothing.
type cgroupSet struct {
	mem, pids         *cgroupDir
	swap              bool
	memBytes          int64
	pidsMax           int
	dirs              []*cgroupDir // all created, for removal
	oomKills, pidsHit int
	memPeak           int64
}

// hierarchies maps a controller name ("memory", "pids") to the v1 directory
// of this process's cgroup for it; "" keys the v2 directory.
type hierarchies map[string]string

var (
	hierOnce sync.Once
	hier     hierarchies
)

// cgroupHierarchies finds, once, where this process's cgroups live.
func cgroupHierarchies() hierarchies {
	hierOnce.Do(func() {
		hier = hierarchies{}
		own := map[string]string{} // controller ("" for v2) -> path
		f, err := os.Open("/proc/self/cgroup")
		if err != nil {
			return
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			parts := strings.SplitN(sc.Text(), ":", 3)
			if len(parts) != 3 {
				continue
			}
			if parts[1] == "" {
				own[""] = parts[2]
			}
			for _, c := range strings.Split(parts[1], ",") {
				own[c] = parts[2]
			}
		}
		f.Close()
		mi, err := os.Open("/proc/self/mountinfo")
		if err != nil {
			return
		}
		defer mi.Close()
		sc = bufio.NewScanner(mi)
		for sc.Scan() {
			// id parent maj:min root mountpoint opts [optional...] - fstype source superopts
			fields := strings.Fields(sc.Text())
			sep := -1
			for i, fld := range fields {
				if fld == "-" {
					sep = i
					break
				}
			}
			if sep < 0 || len(fields) < sep+4 || fields[3] != "/" {
				continue
			}
			mnt, fstype, super := fields[4], fields[sep+1], fields[sep+3]
			switch fstype {
			case "cgroup2":
				if p, ok := own[""]; ok {
					hier[""] = filepath.Join(mnt, p)
				}
			case "cgroup":
				for _, opt := range strings.Split(super, ",") {
					if opt == "memory" || opt == "pids" {
						if p, ok := own[opt]; ok {
							hier[opt] = filepath.Join(mnt, p)
						}
					}
				}
			}
		}
	})
	return hier
}

// newCgroups creates memory and pids cgroups where the host lets us, v2
// (a child of our own cgroup, in a delegated or root subtree) preferred
// per controller, v1 otherwise. Failure to create one is not an error:
// the jail then relies on rlimits and Enforcement says so.
func newCgroups(memBytes int64, pidsMax int) *cgroupSet {
	removeStaleCgroupsOnce.Do(removeStaleCgroups)
	cs := &cgroupSet{memBytes: memBytes, pidsMax: pidsMax}
	name := fmt.Sprintf("%s%d-%d", cgroupNamePrefix, os.Getpid(), cgroupCounter.Add(1))
	h := cgroupHierarchies()
	var v2 *cgroupDir
	if base, ok := h[""]; ok {
		avail, _ := os.ReadFile(filepath.Join(base, "cgroup.controllers"))
		if containsWord(string(avail), "memory") || containsWord(string(avail), "pids") {
			v2 = cs.v2Dir(base, name)
		}
	}
	if v2 != nil && cs.v2Enable(v2, "memory") {
		if writeFile(v2.path, "memory.max", memBytes) == nil {
			cs.mem = v2
			cs.swap = writeFile(v2.path, "memory.swap.max", 0) == nil
		}
	}
	if v2 != nil && cs.v2Enable(v2, "pids") {
		if writeFile(v2.path, "pids.max", int64(pidsMax)) == nil {
			cs.pids = v2
		}
	}
	if cs.mem == nil {
		if d := cs.v1Dir(h, "memory", name); d != nil {
			if writeFile(d.path, "memory.limit_in_bytes", memBytes) == nil {
				cs.mem = d
				cs.swap = writeFile(d.path, "memory.memsw.limit_in_bytes", memBytes) == nil
			}
		}
	}
	if cs.pids == nil {
		if d := cs.v1Dir(h, "pids", name); d != nil {
			if writeFile(d.path, "pids.max", int64(pidsMax)) == nil {
				cs.pids = d
			}
		}
	}
	// Drop directories that ended up enforcing nothing.
	var keep []*cgroupDir
	for _, d := range cs.dirs {
		if d == cs.mem || d == cs.pids {
			keep = append(keep, d)
		} else {
			_ = rmdirRetry(d.path)
		}
	}
	cs.dirs = keep
	return cs
}

func (cs *cgroupSet) v2Dir(base, name string) *cgroupDir {
	p := filepath.Join(base, name)
	if err := os.Mkdir(p, 0o755); err != nil {
		return nil
	}
	d := &cgroupDir{path: p, version: "v2"}
	cs.dirs = append(cs.dirs, d)
	return d
}

// v2Enable makes controller available in d, enabling it in the parent's
// subtree_control if needed (possible only where the parent has no
// processes of its own, or is the root).
func (cs *cgroupSet) v2Enable(d *cgroupDir, controller string) bool {
	has := func() bool {
		b, err := os.ReadFile(filepath.Join(d.path, "cgroup.controllers"))
		return err == nil && containsWord(string(b), controller)
	}
	if has() {
		return true
	}
	_ = os.WriteFile(filepath.Join(filepath.Dir(d.path), "cgroup.subtree_control"), []byte("+"+controller), 0)
	return has()
}

func (cs *cgroupSet) v1Dir(h hierarchies, controller, name string) *cgroupDir {
	base, ok := h[controller]
	if !ok {
		return nil
	}
	p := filepath.Join(base, name)
	for _, d := range cs.dirs {
		if d.path == p {
			return d
		}
	}
	if err := os.Mkdir(p, 0o755); err != nil {
		return nil
	}
	d := &cgroupDir{path: p, version: "v1"}
	cs.dirs = append(cs.dirs, d)
	return d
}

// attach moves pid into every cgroup of the set.
func (cs *cgroupSet) attach(pid int) error {
	for _, d := range cs.dirs {
		if err := writeFile(d.path, "cgroup.procs", int64(pid)); err != nil {
			return fmt.Errorf("jail: add pid %d to cgroup %s: %w", pid, d.path, err)
		}
	}
	return nil
}

// enforce records the set's limits in e.
func (cs *cgroupSet) enforce(e *Enforcement) {
	vers := map[string]bool{}
	if cs.mem != nil {
		e.CgroupMemory, e.CgroupMemoryBytes, e.CgroupSwap = true, cs.memBytes, cs.swap
		vers[cs.mem.version] = true
	}
	if cs.pids != nil {
		e.CgroupPids, e.CgroupPidsMax = true, cs.pidsMax
		vers[cs.pids.version] = true
	}
	switch {
	case vers["v1"] && vers["v2"]:
		e.CgroupVersion = "v1+v2"
	case vers["v1"]:
		e.CgroupVersion = "v1"
	case vers["v2"]:
		e.CgroupVersion = "v2"
	}
}

// collect reads the OOM, peak and pids counters before removal.
func (cs *cgroupSet) collect() {
	cs.oomKills, cs.pidsHit = cs.limitsHit()
	if d := cs.mem; d != nil {
		if d.version == "v1" {
			cs.memPeak = readInt(d.path, "memory.max_usage_in_bytes")
		} else {
			cs.memPeak = readInt(d.path, "memory.peak")
		}
	}
}

// limitsHit reads, while the jail runs, how many of its processes the
// memory cgroup killed and how many forks the pids cgroup refused.
func (cs *cgroupSet) limitsHit() (oomKills, pidsHit int) {
	if d := cs.mem; d != nil {
		if d.version == "v1" {
			oomKills = readKey(d.path, "memory.oom_control", "oom_kill")
		} else {
			oomKills = readKey(d.path, "memory.events", "oom_kill")
		}
	}
	if d := cs.pids; d != nil {
		pidsHit = readKey(d.path, "pids.events", "max")
	}
	return oomKills, pidsHit
}

// memoryKills is what the memory cgroup's limit has killed so far, and the
// limit; ok is false without a memory cgroup.
func (cs *cgroupSet) memoryKills() (kills int, limit int64, ok bool) {
	if cs.mem == nil {
		return 0, 0, false
	}
	kills, _ = cs.limitsHit()
	return kills, cs.memBytes, true
}

// remove deletes every cgroup of the set. The jail must be dead.
func (cs *cgroupSet) remove() error {
	var first error
	for _, d := range cs.dirs {
		if err := rmdirRetry(d.path); err != nil && first == nil {
			first = err
		}
	}
	cs.dirs = nil
	return first
}

func rmdirRetry(p string) error {
	var err error
	for i := 0; i < 200; i++ {
		err = os.Remove(p)
		if err == nil || os.IsNotExist(err) {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("jail: remove cgroup: %w", err)
}

var removeStaleCgroupsOnce sync.Once

// removeStaleCgroups removes cgroups left by jail hosts that died (for
// example by SIGKILL) before they could clean up.
func removeStaleCgroups() {
	for _, base := range cgroupHierarchies() {
		ents, err := os.ReadDir(base)
		if err != nil {
			continue
		}
		for _, e := range ents {
			pid, ok := cgroupOwner(e.Name())
			if !ok || pid == os.Getpid() {
				continue
			}
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
				_ = os.Remove(filepath.Join(base, e.Name())) // fails harmlessly if still populated
			}
		}
	}
}

// cgroupOwner parses the host pid out of a cgroup name made by newCgroups.
func cgroupOwner(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, cgroupNamePrefix)
	if !ok {
		return 0, false
	}
	pidStr, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(pidStr)
	return pid, err == nil
}

func writeFile(dir, name string, v int64) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(strconv.FormatInt(v, 10)), 0)
}

func readInt(dir, name string) int64 {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v
}

// readKey reads "key value" from a flat-keyed cgroup file.
func readKey(dir, name, key string) int {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

func containsWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}
