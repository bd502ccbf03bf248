//go:build linux

package server

import (
	"bytes"
	"os"
	"path"
	"strconv"
	"strings"
)

// maxCgroupFile bounds what is read of a cgroup file.
const maxCgroupFile = 4 << 10

// ownMemory is the [MemoryCounter] of this process's own memory cgroup, as
// a sandbox server in a container sees it, or nil when it has none it can
// read.
func ownMemory() MemoryCounter {
	dir, v2 := memoryCgroupDir()
	if dir == "" {
		return nil
	}
	events, limitFile := "memory.oom_control", "memory.limit_in_bytes"
	if v2 {
		events, limitFile = "memory.events", "memory.max"
	}
	count := func() (int, int64, bool) {
		kills, ok := readCgroupKey(path.Join(dir, events), "oom_kill")
		if !ok {
			return 0, 0, false
		}
		return kills, readCgroupLimit(path.Join(dir, limitFile)), true
	}
	if _, _, ok := count(); !ok {
		return nil
	}
	return count
}

// memoryCgroupDir finds this process's memory cgroup under /sys/fs/cgroup:
// the v1 memory controller's directory, else the v2 one.
func memoryCgroupDir() (dir string, v2 bool) {
	data, err := readBounded("/proc/self/cgroup")
	if err != nil {
		return "", false
	}
	var v1Path, v2Path string
	v2Found := false
	for _, line := range strings.Split(string(data), "\n") {
		// hierarchy-ID:controllers:path
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !strings.HasPrefix(f[2], "/") {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			v2Path, v2Found = f[2], true
		case hasController(f[1], "memory"):
			v1Path = f[2]
		}
	}
	// A cgroup namespace shows "/"; without one the path is the host's,
	// while the container may have its own cgroup mounted at the root:
	// try the path, then the root.
	try := func(root, p, file string) string {
		for _, d := range []string{path.Join(root, path.Clean(p)), root} {
			if _, err := os.Stat(path.Join(d, file)); err == nil {
				return d
			}
		}
		return ""
	}
	if v1Path != "" {
		if d := try("/sys/fs/cgroup/memory", v1Path, "memory.oom_control"); d != "" {
			return d, false
		}
	}
	if v2Found {
		if d := try("/sys/fs/cgroup", v2Path, "memory.events"); d != "" {
			return d, true
		}
	}
	return "", false
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readCgroupKey reads the value of key in a file of "key value" lines.
func readCgroupKey(file, key string) (int, bool) {
	data, err := readBounded(file)
	if err != nil {
		return 0, false
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) == 2 && string(f[0]) == key {
			n, err := strconv.Atoi(string(f[1]))
			return n, err == nil && n >= 0
		}
	}
	return 0, false
}

// readCgroupLimit reads a memory limit file: bytes, or "max" (none, 0).
// v1 gives a huge number for none: that counts as none too.
func readCgroupLimit(file string) int64 {
	data, err := readBounded(file)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0
	}
	return n
}

func readBounded(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, maxCgroupFile)
	n, err := f.Read(buf)
	if n == 0 && err != nil {
		return nil, err
	}
	return buf[:n], nil
}
