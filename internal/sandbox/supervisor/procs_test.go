//go:build linux

package supervisor

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

const testPython = "/usr/bin/python3"

func needPython(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(testPython); err != nil {
		hostcap.Missing(t, hostcap.Python, err)
	}
}

// TestBootRunsCompiledRunner checks that a worker runs the compiled runner
// when its interpreter compiled it, and compiles the source otherwise.
func TestBootRunsCompiledRunner(t *testing.T) {
	needPython(t)
	// Compile a stand-in for the runner that says which way it ran; the
	// real source (sent after it) would wait for frames on fd 3.
	out, err := exec.Command(testPython, "-I", "-c", `import marshal, sys
sys.stdout.buffer.write(marshal.dumps(compile("print('compiled:' + __name__)", "<string>", "exec")))`).Output()
	if err != nil {
		t.Fatal(err)
	}
	version, err := exec.Command(testPython, "-I", "-c", "import sys; sys.stdout.write(sys.version)").Output()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testPython, "-I", "-B", "-S", "-c", bootSource)
	r, w, _ := os.Pipe()
	cmd.ExtraFiles = []*os.File{nil, nil, r}
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	writeRunner(w, string(version), out)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := stdout.String(); got != "compiled:__main__\n" {
		t.Errorf("matching version: output %q, want the compiled code's", got)
	}

	// Another interpreter's bytecode is never loaded: the source runs and
	// announces itself on fd 4.
	cmd = exec.Command(testPython, "-I", "-B", "-S", "-c", bootSource)
	r, w, _ = os.Pipe()
	inR, inW, _ := os.Pipe()
	ctlR, ctlW, _ := os.Pipe()
	cmd.ExtraFiles = []*os.File{inR, ctlW, r}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	inR.Close()
	ctlW.Close()
	writeRunner(w, "9.9.9 (another build)", []byte("not marshal data"))
	line, err := bufio.NewReader(ctlR).ReadString('\n')
	inW.Close() // the runner exits when its control pipe closes
	ctlR.Close()
	_ = cmd.Wait()
	if err != nil || !strings.HasPrefix(line, `{"kind":"ready"`) {
		t.Errorf("other version: got %q, %v; want the source's ready frame", line, err)
	}
}

// TestAdopt checks that Procs takes a running child for a worker, that it
// keeps the exit of one that ended before it was adopted, and that it
// refuses a process that is not its child.
func TestAdopt(t *testing.T) {
	start := func(args ...string) int {
		t.Helper()
		p, err := os.StartProcess(args[0], args, &os.ProcAttr{})
		if err != nil {
			t.Fatal(err)
		}
		return p.Pid
	}
	newProcs := func(pid int) *Procs {
		t.Helper()
		cfg := &Config{Python: testPython, Workdir: t.TempDir(), Adopt: &Adopted{Pid: pid}}
		if err := cfg.SetDefaults(); err != nil {
			t.Fatal(err)
		}
		return NewProcs(cfg)
	}
	adopt := func(p *Procs) (int, <-chan syscall.WaitStatus, error) {
		exited := make(chan syscall.WaitStatus, 1)
		pid, err := p.Adopt(func(st syscall.WaitStatus) { exited <- st })
		return pid, exited, err
	}
	wait := func(t *testing.T, exited <-chan syscall.WaitStatus) syscall.WaitStatus {
		t.Helper()
		select {
		case st := <-exited:
			return st
		case <-time.After(10 * time.Second):
			t.Fatal("the adopted worker's exit was not reported")
			return 0
		}
	}

	t.Run("running", func(t *testing.T) {
		pid := start("/bin/sleep", "30")
		p := newProcs(pid)
		defer p.Close()
		got, exited, err := adopt(p)
		if err != nil || got != pid {
			t.Fatalf("Adopt() = %d, %v; want %d", got, err, pid)
		}
		if _, _, err := adopt(p); err == nil {
			t.Error("a worker was adopted twice")
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if st := wait(t, exited); !st.Signaled() || st.Signal() != syscall.SIGKILL {
			t.Errorf("status %v; want killed by SIGKILL", st)
		}
	})
	t.Run("exited before", func(t *testing.T) {
		pid := start("/bin/sh", "-c", "exit 7")
		p := newProcs(pid)
		defer p.Close()
		// Let the reaper collect it before it is adopted.
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		got, exited, err := adopt(p)
		if err != nil || got != pid {
			t.Fatalf("Adopt() = %d, %v; want %d", got, err, pid)
		}
		if st := wait(t, exited); st.ExitStatus() != 7 {
			t.Errorf("status %v; want exit 7", st)
		}
	})
	t.Run("not a child", func(t *testing.T) {
		p := newProcs(os.Getppid())
		defer p.Close()
		if _, _, err := adopt(p); err == nil || !strings.Contains(err.Error(), "not a child") {
			t.Errorf("Adopt() of the parent: %v; want it refused", err)
		}
	})
}
