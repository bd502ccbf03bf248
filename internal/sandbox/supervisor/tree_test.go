//go:build linux

package supervisor

import (
	"bufio"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

// tree is a Python program run as the root of a tree of processes.
type tree struct {
	root int
	in   *os.File      // the root's stdin
	out  *bufio.Reader // the root's stdout
}

// startTree starts program and waits for its first line (the tree is
// built by then). The program is pid 1 of a pid namespace of its own and
// dies with the test's process, so that no process of the tree can
// outlive the test, whatever it does and however the test ends; the tree
// is killed at the end of the test.
func startTree(t *testing.T, program string) *tree {
	t.Helper()
	needPython(t)
	cmd := exec.Command(testPython, "-I", "-c", program)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = inR
	if err := cmd.Start(); err != nil {
		hostcap.Missing(t, hostcap.UserNS, err)
	}
	inR.Close()
	tr := &tree{root: cmd.Process.Pid, in: inW, out: bufio.NewReader(out)}
	t.Cleanup(func() {
		KillTree(tr.root)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		inW.Close()
	})
	tr.line(t)
	return tr
}

// line reads the root's next line.
func (tr *tree) line(t *testing.T) string {
	t.Helper()
	l, err := tr.out.ReadString('\n')
	if err != nil {
		t.Fatalf("the tree's root said nothing: %v", err)
	}
	return strings.TrimSpace(l)
}

// hostPid is the pid in this namespace of the tree's process that is nspid
// in the tree's own.
func (tr *tree) hostPid(t *testing.T, nspid string) int {
	t.Helper()
	for _, pid := range Descendants(tr.root) {
		status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(status), "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[0] == "NSpid:" && f[len(f)-1] == nspid {
				return pid
			}
		}
	}
	t.Fatalf("no process of the tree is %s in its namespace", nspid)
	return 0
}

// states returns the state of each live descendant of root.
func states(root int) map[int]byte {
	out := map[int]byte{}
	for k, p := range walk(root, nil) {
		if !p.dead() {
			out[k] = p.state
		}
	}
	return out
}

// TestFreezeStopsAForkingTree freezes a tree whose processes fork without
// end (each child exits soon, so the tree stays small): once Freeze
// returns, every descendant is stopped and none is born.
func TestFreezeStopsAForkingTree(t *testing.T) {
	tr := startTree(t, subreaper+`import os, time
def churn():
    end = time.monotonic() + 120
    while time.monotonic() < end:
        try:
            if os.fork() == 0:
                time.sleep(0.002)
                os._exit(0)
            os.waitpid(-1, 0)
        except OSError:
            time.sleep(0.001)
    os._exit(0)
for _ in range(4):
    if os.fork() == 0:
        churn()
print("ready", flush=True)
while True:
    time.sleep(1)
`)
	Freeze(tr.root, 0)
	first := states(tr.root)
	if len(first) < 4 {
		t.Fatalf("%d descendants after Freeze, want at least the 4 churning ones", len(first))
	}
	for pid, st := range first {
		if st != 'T' && st != 't' {
			t.Errorf("pid %d is in state %c after Freeze, want stopped", pid, st)
		}
	}
	// Frozen, the tree can neither grow nor change.
	if second := states(tr.root); !slices.Equal(sortedKeys(first), sortedKeys(second)) {
		t.Errorf("the frozen tree changed: %v, then %v", sortedKeys(first), sortedKeys(second))
	}
	KillTree(tr.root)
	if left := Descendants(tr.root); len(left) != 0 {
		t.Errorf("descendants left after KillTree: %v", left)
	}
}

// TestKillTreeEndsMovingProcesses kills a tree of 50 processes that each
// fork a child and exit, over and over, so that the pids of the tree
// change faster than /proc can be read: nothing is left. The root is a
// child subreaper, as the supervisor is, so that orphans stay in the tree.
func TestKillTreeEndsMovingProcesses(t *testing.T) {
	tr := startTree(t, subreaper+`import os, time
r, w = os.pipe()
for _ in range(50):
    if os.fork() == 0:
        os.close(r)
        os.write(w, b"x")
        end = time.monotonic() + 120
        while time.monotonic() < end:
            try:
                if os.fork() != 0:
                    os._exit(0)
            except OSError:
                pass
            time.sleep(0.001)
        os._exit(0)
os.close(w)
n = 0
while n < 50:
    n += len(os.read(r, 4096))
print("moving", flush=True)
while True:
    time.sleep(1)
`)
	KillTree(tr.root)
	if left := Descendants(tr.root); len(left) != 0 {
		t.Errorf("%d descendants left after KillTree", len(left))
	}
}

// subreaper has the Python program, pid 1 of its namespace and so the
// reaper of its orphans as the supervisor is, and every process it forks
// reap their children at once.
const subreaper = `import signal
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
`

// TestSettleKillsOnlyTheBlocksProcesses: of a tree with a process started
// before the block and 32 started during it, Settle kills the 32, spares
// the worker and resumes the older process.
func TestSettleKillsOnlyTheBlocksProcesses(t *testing.T) {
	tr := startTree(t, subreaper+`import os, sys, time
if os.fork() == 0:
    time.sleep(600)
    os._exit(0)
print("early", flush=True)
sys.stdin.readline()
r, w = os.pipe()
worker = os.fork()
if worker == 0:
    os.close(r)
    for _ in range(32):
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
    os.write(w, b"x")
    time.sleep(600)
    os._exit(0)
os.close(w)
os.read(r, 1)
print(worker, flush=True)
while True:
    time.sleep(1)
`)
	earlier := Descendants(tr.root)
	if len(earlier) != 1 {
		t.Fatalf("%d descendants before the block, want the one sleeper", len(earlier))
	}
	// Two ticks of /proc's clock later, so that the start times differ.
	time.Sleep(2 * clockTick)
	since := BootTime()
	if _, err := tr.in.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	worker := tr.hostPid(t, tr.line(t))
	Freeze(tr.root, worker)
	if n := Settle(tr.root, worker, since); n != 32 {
		t.Errorf("Settle killed %d processes, want the block's 32", n)
	}
	left := states(tr.root)
	if len(left) != 2 {
		t.Errorf("after Settle: %v, want the earlier sleeper and the worker", left)
	}
	for _, pid := range append(earlier, worker) {
		if st, ok := left[pid]; !ok || st == 'T' || st == 't' {
			t.Errorf("process %d: state %q, want it running", pid, st)
		}
	}
}

func sortedKeys(m map[int]byte) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
