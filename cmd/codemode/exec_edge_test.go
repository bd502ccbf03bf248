package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adk-codemode/codemode/transport"
)

// Code on standard input larger than the reader's bound must be refused,
// not silently cut and run in part.
func TestExecStdinTooLargeIsRefused(t *testing.T) {
	code := "x = 1\n#" + strings.Repeat("x", 16<<20) + "\nprint('end')\n"
	rc, out, errs := runCLI(t, code, "exec", "--backend", "unsandboxed", "-")
	if rc != 2 || strings.Contains(out, "end") || !strings.Contains(errs, "standard input") {
		t.Fatalf("17 MiB of code on stdin: exit %d, stdout %q, stderr %.300q; want exit 2 and an error about standard input", rc, out, errs)
	}
}

// A hard link planted in the output directory must not redirect a write
// to the file it shares its inode with, outside the directory.
func TestExecOutPlantedHardLink(t *testing.T) {
	dir := t.TempDir()
	outDir := filepath.Join(dir, "out")
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("untouched"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(outDir, "planted.txt")); err != nil {
		t.Fatal(err)
	}
	_, _, errs := runCLI(t, "", "exec", "--backend", "unsandboxed", "--out", outDir, "-c", "open('planted.txt','w').write('overwritten')")
	if b, _ := os.ReadFile(secret); string(b) != "untouched" {
		t.Errorf("the file behind the planted hard link was changed to %q (stderr %s)", b, errs)
	}
	if b, err := os.ReadFile(filepath.Join(outDir, "planted.txt")); err != nil || string(b) != "overwritten" {
		t.Errorf("planted.txt in --out = %q, %v; want the sandbox's file", b, err)
	}
}

// When --out cannot take a block's files, the block has still run: its
// output must not be lost.
func TestExecOutFailureKeepsBlockOutput(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		outDir := t.TempDir()
		if err := os.Mkdir(filepath.Join(outDir, "r.txt"), 0o755); err != nil {
			t.Fatal(err)
		}
		args := []string{"exec", "--backend", "unsandboxed", "--out", outDir, "-c", "print('ran')\nopen('r.txt','w').write('x')"}
		if asJSON {
			args = append(args[:1], append([]string{"--json"}, args[1:]...)...)
		}
		rc, out, errs := runCLI(t, "", args...)
		if rc == 0 || !strings.Contains(errs, "r.txt") {
			t.Errorf("json=%v: exit %d, stderr %q; want a failure naming r.txt", asJSON, rc, errs)
		}
		if asJSON {
			var b blockJSON
			if err := json.Unmarshal([]byte(out), &b); err != nil || b.Stdout != "ran\n" {
				t.Errorf("json: stdout %q (%v); want the block's JSON line", out, err)
			}
		} else if out != "ran\n" {
			t.Errorf("stdout %q; want the block's output", out)
		}
	}
}

// failingBackend cannot open sessions.
type failingBackend struct{}

func (failingBackend) Name() string { return "failing" }
func (failingBackend) Open(context.Context, transport.SessionConfig) (transport.Session, error) {
	return nil, errors.New("injected session failure")
}

// doctor exits non-zero when the default backend cannot run here, which
// includes a jail that starts but cannot open a session.
func TestDoctorFailsWhenJailSessionFails(t *testing.T) {
	saved := backends["jail"]
	backends["jail"] = backendInfo{summary: saved.summary, open: func(string) transport.Backend { return failingBackend{} }}
	defer func() { backends["jail"] = saved }()
	rc, out, errs := runCLI(t, "", "doctor")
	if !strings.Contains(out, "jail session: failed: injected session failure") {
		t.Fatalf("doctor did not use the jail backend's session: exit %d\n%s\n%s", rc, out, errs)
	}
	if rc == 0 {
		t.Errorf("doctor exited 0 although a jail session cannot open:\n%s\n%s", out, errs)
	}
}
