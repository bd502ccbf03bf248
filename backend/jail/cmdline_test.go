//go:build linux && amd64

package jail

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTemplateCommandLine starts a template and reads its command line
// as ps does: a short bootstrap, not the template's source.
func TestTemplateCommandLine(t *testing.T) {
	z, err := startZygote(Config{}, "TestTemplateCommandLine")
	skipIfUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		z.retire()
		select {
		case <-z.ended:
		case <-time.After(10 * time.Second):
			t.Error("the template's jail did not end after it was retired")
		}
	})
	pid := templatePid(t, z.cmd.Pid())
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
	if len(cmdline) > 1024 {
		t.Errorf("the template's command line is %d bytes, want at most 1024: %q", len(cmdline), args)
	}
	if len(args) < 2 || args[len(args)-2] != "-c" || args[len(args)-1] != zygoteBootstrap {
		t.Errorf("the template's command line is %q, want python's -c and the bootstrap", args)
	}
	for _, line := range []string{"def template(", "_load_runner", "import ctypes"} {
		if bytes.Contains(cmdline, []byte(line)) {
			t.Errorf("the template's command line holds its source (%q)", line)
		}
	}
	if !strings.Contains(zygoteSource, "def template(") {
		t.Fatal("the test looks for text zygote.py no longer has")
	}
}

// templatePid finds the python process below the jail whose pid 1 is
// init: the template itself.
func templatePid(t *testing.T, init int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		parents := map[int]int{}
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if err != nil {
				continue
			}
			// The command name may hold spaces and parentheses: the
			// fields after it start after the last ')'.
			i := bytes.LastIndexByte(stat, ')')
			if i < 0 {
				continue
			}
			f := strings.Fields(string(stat[i+1:]))
			if len(f) < 2 {
				continue
			}
			parents[pid], _ = strconv.Atoi(f[1])
		}
		for pid := range parents {
			if pid == init {
				continue
			}
			for p := parents[pid]; p > 1; p = parents[p] {
				if p != init {
					continue
				}
				exe, _ := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
				comm, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
				if strings.Contains(filepath.Base(exe), "python") || strings.HasPrefix(string(comm), "python") {
					return pid
				}
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no python process below the jail's init (pid %d)", init)
	return 0
}
