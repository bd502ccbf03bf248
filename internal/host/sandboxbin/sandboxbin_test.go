//go:build linux

package sandboxbin

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

// TestUpToDate rebuilds the sandbox program from its sources and fails if
// the embedded copies differ: an edit to the supervisor or the jail's init
// stage must be followed by go generate ./internal/host/sandboxbin.
func TestUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the program twice; not with -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		hostcap.Missing(t, hostcap.GoCommand, "to rebuild the sandbox program: ", err)
	}
	cmd := exec.Command("go", "run", "gen.go", "-check")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		hostcap.Missing(t, hostcap.GoCommand, "of the version the sandbox program was built with: ", string(out))
	}
	if err != nil {
		t.Fatalf("go run gen.go -check: %v\n%s", err, out)
	}
}

// TestOpen checks the descriptor: read-only, sealed, executable, one per
// process, above the numbers a child's extra files take.
func TestOpen(t *testing.T) {
	f, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	g, _ := Open()
	if f != g {
		t.Error("Open made a second descriptor")
	}
	if f.Fd() < minFD {
		t.Errorf("descriptor %d, want at least %d", f.Fd(), minFD)
	}
	fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil || fl&unix.O_ACCMODE != unix.O_RDONLY {
		t.Errorf("flags %#x (%v), want read-only", fl, err)
	}
	if fd, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0); err != nil || fd&unix.FD_CLOEXEC == 0 {
		t.Errorf("descriptor flags %#x (%v), want close-on-exec", fd, err)
	}
	if seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0); err == nil {
		want := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
		if seals&want != want {
			t.Errorf("seals %#x, want %#x", seals, want)
		}
		// Sealed: not even a descriptor opened for writing can change it.
		p, _ := Path()
		if w, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
			if _, err := w.Write([]byte("x")); err == nil {
				t.Error("wrote to the sealed program")
			}
			w.Close()
		}
	}
}

// TestRunsUnderItsNames runs the program: an unknown argv[0] exits 2 with
// a message, and the supervisor's name reaches the supervisor (which wants
// one argument).
func TestRunsUnderItsNames(t *testing.T) {
	p, err := Path()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		argv0, want string
	}{
		{"codemode-something", "none of this program's stages"},
		{"codemode-supervisor", "want one argument"},
	} {
		cmd := &exec.Cmd{Path: p, Args: []string{c.argv0}}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !bytes.Contains(stderr.Bytes(), []byte(c.want)) {
			t.Errorf("%s: %v, stderr %q; want exit 2 and %q", c.argv0, err, stderr.String(), c.want)
		}
	}
}
