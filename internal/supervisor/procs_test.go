//go:build linux

package supervisor

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/adk-codemode/codemode/internal/hostcap"
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
