package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/transport"
)

// TestPythonFromPATH: the default --python, python3, and any name without
// a slash are looked up on PATH, and a relative path is read against the
// directory the server starts in, not the workspace the worker runs in.
func TestPythonFromPATH(t *testing.T) {
	bin := buildServer(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/bin/python3", filepath.Join(dir, "bin", "python3")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"default", nil},
		{"name", []string{"--python", "python3"}},
		{"relative path", []string{"--python", "bin/python3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, append(tc.args, "--workdir", t.TempDir())...)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=" + filepath.Join(dir, "bin")}
			in, _ := cmd.StdinPipe()
			out, _ := cmd.StdoutPipe()
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			s, err := wire.NewClient(t.Context(), wire.NewConn(out, in, in, 0), transport.SessionConfig{}, wire.ClientOptions{})
			if err != nil {
				t.Fatalf("%v\nstderr: %s", err, stderr.String())
			}
			defer s.Close()
			r, err := s.Exec(t.Context(), transport.Block{Code: "print(6 * 7)", Timeout: 30 * time.Second})
			if err != nil || r.Stdout != "42\n" {
				t.Fatalf("%v %+v", err, r)
			}
		})
	}
}

// TestStartupRefusals: an interpreter or a workspace that cannot be used
// is refused at start with exit status 2, on stderr and, for the host
// that reads frames, in an error frame, by the flag's name and with what
// to do, instead of as the worker's failure to start.
func TestStartupRefusals(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("not a program\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir) // holds no python3
	ws := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"python not on PATH", []string{"--workdir", ws},
			[]string{"--python python3: no executable of that name on PATH (" + dir + ")", "add its directory to PATH"}},
		{"python missing", []string{"--python", "/nonexistent/python3", "--workdir", ws},
			[]string{"--python /nonexistent/python3: no such file", "pass --python with the path of a Python 3 interpreter"}},
		{"python not executable", []string{"--python", file, "--workdir", ws},
			[]string{"--python " + file + ": not an executable file (permission denied)"}},
		{"python a directory", []string{"--python", dir, "--workdir", ws},
			[]string{"--python " + dir + ": not an executable file"}},
		{"workdir missing", []string{"--python", "/usr/bin/python3", "--workdir", filepath.Join(dir, "missing")},
			[]string{"--workdir " + filepath.Join(dir, "missing") + " does not exist: create it", "--tmpfs"}},
		{"workdir a file", []string{"--python", "/usr/bin/python3", "--workdir", file},
			[]string{"--workdir " + file + " is not a directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, strings.NewReader(""), &stdout, &stderr)
			if code != 2 {
				t.Errorf("exit status %d, want 2", code)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q lacks %q", stderr.String(), w)
				}
			}
			f, err := wire.NewConn(&stdout, nil, nil, 0).Read()
			if ef, ok := f.(*wire.ErrorFrame); !ok || err != nil || ef.Message+"\n" != stderr.String() {
				t.Errorf("stdout: frame %#v, %v; want an error frame with the message on stderr", f, err)
			}
		})
	}
}

// TestWorkdirNotWritable: a workspace the server's user cannot write to is
// refused at start. Root writes anywhere the file system allows, so as
// root the server runs as the unprivileged uid 65534.
func TestWorkdirNotWritable(t *testing.T) {
	// Both directories are readable by everyone, for the unprivileged
	// user; the workspace is writable by no one but root.
	dir, err := os.MkdirTemp("", "codemode-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeAll(dir) })
	ws := filepath.Join(dir, "workspace")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ws, 0o555); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "codemode-sandbox")
	if err := os.Link(buildServer(t), bin); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--python", "/usr/bin/python3", "--workdir", ws)
	uid := os.Geteuid()
	if uid == 0 {
		uid = 65534
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("err %v, output %q: want exit status 2", err, out)
	}
	want := "--workdir " + ws + " is not writable by user " + strconv.Itoa(uid) + " (permission denied)"
	if !strings.Contains(string(out), want) || !strings.Contains(string(out), "make it writable") {
		t.Errorf("output %q lacks %q and what to do", out, want)
	}
}

// TestListenRefusesMissingWorkdir: with --listen the workspace is checked
// before the server listens, where a session would otherwise fail only
// once a client had connected; with --jail, whose sessions have a
// workspace of their own, it is not used, so not checked.
func TestListenRefusesMissingWorkdir(t *testing.T) {
	bin := buildServer(t)
	missing := filepath.Join(t.TempDir(), "missing")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--listen", "127.0.0.1:0", "--insecure-no-auth", "--python", "/usr/bin/python3", "--workdir", missing)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "--workdir "+missing+" does not exist") || strings.Contains(string(out), "listening") {
		t.Fatalf("err %v, output %q: want a refusal to start that names --workdir", err, out)
	}
	if strings.Contains(string(out), "{") {
		t.Errorf("output %q: with --listen, stdout is not a frame stream and gets no error frame", out)
	}

	// With --jail the server either listens or says that the jail cannot
	// run here; either way --workdir is not its complaint.
	cmd = exec.CommandContext(ctx, bin, "--listen", "127.0.0.1:0", "--insecure-no-auth", "--jail", "--python", "/usr/bin/python3", "--workdir", missing)
	// TMPDIR: the server, killed below, has no chance to remove the
	// directory it makes for the tools package.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + t.TempDir()}
	pipe, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.HasPrefix(sc.Text(), "codemode-sandbox: listening on ") {
			_ = cmd.Process.Kill()
			break
		}
	}
	_ = cmd.Wait()
	if got := strings.Join(lines, "\n"); strings.Contains(got, "--workdir") || !strings.Contains(got, "listening") && !strings.Contains(got, "--jail: the namespace jail cannot run here") {
		t.Errorf("with --jail: output %q; want it to listen, or to say that the jail cannot run, without checking --workdir", got)
	}
}

// TestListenJailAsUser: a server that is not root cannot start its jail,
// since it makes itself non-dumpable; it says so, and that it should run
// as root in its container, rather than that the host lacks namespaces.
func TestListenJailAsUser(t *testing.T) {
	dir, err := os.MkdirTemp("", "codemode-sandbox-test-") // readable by the unprivileged user
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "codemode-sandbox")
	if err := os.Link(buildServer(t), bin); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--listen", "127.0.0.1:0", "--insecure-no-auth", "--jail", "--python", "/usr/bin/python3")
	tmp := filepath.Join(dir, "tmp") // for the tools package, writable by that user too
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + tmp}
	uid := os.Geteuid()
	if uid == 0 {
		uid = 65534
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "permission denied") {
		// The host refuses user namespaces to this user in the first
		// place, for a reason the jail names.
		hostcap.Missing(t, hostcap.UserNS, string(out))
	}
	// The path is the sandbox program's descriptor (internal/host/sandboxbin).
	want := "--jail: as user " + strconv.Itoa(uid) + " the server cannot start its jail (fork/exec /proc/self/fd/"
	if !strings.HasPrefix(string(out), "codemode-sandbox: "+want) || !strings.Contains(string(out), ": permission denied)") ||
		!strings.Contains(string(out), "--user 0") || strings.Contains(string(out), "listening") {
		t.Errorf("output %q; want it to start with %q and say to run as root", out, want)
	}
}
