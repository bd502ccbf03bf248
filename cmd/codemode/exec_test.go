package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

// The CLI re-executes its own binary for the sandbox; in tests that is the
// test binary, whose init hooks (linked in by the jail and the session server's packages)
// take over under their stage names.

func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestExecStateAcrossBlocks(t *testing.T) {
	for _, backend := range []string{"jail", "unsandboxed"} {
		t.Run(backend, func(t *testing.T) {
			code, out, errs := runCLI(t, "", "exec", "--backend", backend, "-c", "x = 20", "-c", "x += 22", "-c", "print(x)")
			if code != 0 || out != "42\n" {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
			}
		})
	}
}

func TestExecJSON(t *testing.T) {
	code, out, errs := runCLI(t, "", "exec", "--json",
		"-c", "print('hi')\nopen('r.txt', 'w').write('ok')",
		"-c", "import sys\nprint('oops', file=sys.stderr)\nsys.exit(3)")
	if code != 0 {
		t.Fatalf("exit %d (a non-zero exit of the code is not a failure of the command): %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one JSON line per block, got %q", out)
	}
	var blocks []map[string]any
	for _, l := range lines {
		dec := json.NewDecoder(strings.NewReader(l))
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if want := []string{"duration_ms", "exit_code", "output_files", "stderr", "stdout"}; !slices.Equal(keys, want) {
			t.Errorf("keys %v, want %v", keys, want)
		}
		blocks = append(blocks, m)
	}
	if blocks[0]["stdout"] != "hi\n" || blocks[0]["exit_code"] != 0.0 {
		t.Errorf("block 1: %v", blocks[0])
	}
	if files, _ := blocks[0]["output_files"].([]any); len(files) != 1 || files[0] != "r.txt" {
		t.Errorf("block 1 output_files = %v", blocks[0]["output_files"])
	}
	if blocks[1]["stderr"] != "oops\n" || blocks[1]["exit_code"] != 3.0 {
		t.Errorf("block 2: %v", blocks[1])
	}
	if files, _ := blocks[1]["output_files"].([]any); files == nil || len(files) != 0 {
		t.Errorf("block 2 output_files = %#v, want an empty list", blocks[1]["output_files"])
	}
}

func TestExecFileAndStdin(t *testing.T) {
	p := filepath.Join(t.TempDir(), "prog.py")
	if err := os.WriteFile(p, []byte("print(sum(range(5)))\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, "", "exec", p); code != 0 || out != "10\n" {
		t.Errorf("file: exit %d, %q %q", code, out, errs)
	}
	if code, out, errs := runCLI(t, "print('from stdin')", "exec", "-"); code != 0 || out != "from stdin\n" {
		t.Errorf("stdin: exit %d, %q %q", code, out, errs)
	}
}

func TestExecOut(t *testing.T) {
	dir := t.TempDir()
	outDir := filepath.Join(dir, "out")
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("untouched"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A symlink planted in the output directory must not redirect a write.
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(outDir, "planted.txt")); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, "", "exec", "--out", outDir,
		"-c", "import os\nos.makedirs('sub', exist_ok=True)\nopen('sub/a.txt','w').write('A')\nos.symlink('/etc/hostname', 'link')",
		"-c", "open('b.bin','wb').write(bytes(range(3)))")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if b, err := os.ReadFile(filepath.Join(outDir, "sub", "a.txt")); err != nil || string(b) != "A" {
		t.Errorf("sub/a.txt = %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(outDir, "b.bin")); err != nil || !bytes.Equal(b, []byte{0, 1, 2}) {
		t.Errorf("b.bin = %v, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(outDir, "link")); !os.IsNotExist(err) {
		t.Errorf("a symlink from the sandbox was copied out: %v", err)
	}
	code, _, errs = runCLI(t, "", "exec", "--out", outDir, "-c", "open('planted.txt','w').write('overwritten')")
	if code == 0 {
		t.Errorf("writing through a planted symlink succeeded")
	}
	if b, _ := os.ReadFile(secret); string(b) != "untouched" {
		t.Errorf("the file behind the planted symlink was changed to %q (stderr %s)", b, errs)
	}
}

func TestExecUsageAndFailures(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"exec"}, 2, "give -c CODE"},
		{[]string{"exec", "-c", "1", "file.py"}, 2, "not both"},
		{[]string{"exec", "--backend", "nope", "-c", "1"}, 2, `unknown backend "nope"`},
		{[]string{"exec", "missing-file.py"}, 2, "missing-file.py"},
		{[]string{"exec", "--python", "/nonexistent/python3", "-c", "1"}, 1, "could not start"},
		{[]string{"exec", "--timeout", "-1s", "-c", "1"}, 2, "must not be negative"},
		{[]string{"exec", "--grace", "0s", "-c", "1"}, 2, "--grace must be positive"},
		{[]string{"frobnicate"}, 2, "unknown command"},
	}
	for _, c := range cases {
		code, _, errs := runCLI(t, "", c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", c.args, code, errs, c.code, c.want)
		}
	}
}

func TestExecTimeoutKeepsSession(t *testing.T) {
	code, out, errs := runCLI(t, "", "exec", "--timeout", "1s", "-c", "v = 'kept'", "-c", "while True: pass", "-c", "print(v)")
	if code != 0 || out != "kept\n" || !strings.Contains(errs, "CodeTimeout") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestHelp(t *testing.T) {
	for _, cmd := range []string{"exec", "doctor", "stubs", "catalog"} {
		code, out, errs := runCLI(t, "", cmd, "--help")
		if code != 0 || !strings.Contains(out+errs, "Usage: codemode "+cmd) {
			t.Errorf("%s --help: exit %d, output %q", cmd, code, out+errs)
		}
	}
	if code, out, _ := runCLI(t, "", "help"); code != 0 || !strings.Contains(out, "exec") {
		t.Errorf("help: exit %d %q", code, out)
	}
}

func TestDoctor(t *testing.T) {
	code, out, errs := runCLI(t, "", "doctor")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"pid namespace", "seccomp filter", "net namespace (no network)", "session start, no pool", "jail session ready", "egress: none: code has no network"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	columns := regexp.MustCompile(`\s{2,}`)
	for _, line := range strings.Split(out, "\n") {
		f := columns.Split(strings.TrimSpace(line), -1)
		switch {
		case strings.HasPrefix(line, "protection"):
			if want := []string{"protection", "jail (cold)", "jail (forked)", "docker", "unsandboxed"}; !slices.Equal(f, want) {
				t.Errorf("columns %q, want %q", f, want)
			}
		case strings.HasPrefix(line, "seccomp filter") || strings.HasPrefix(line, "pid namespace"):
			if len(f) != 5 || f[1] != "yes" || f[2] != "yes" || f[4] != "no" {
				t.Errorf("the jail, cold and forked, should enforce this here, and unsandboxed not: %q", line)
			}
		case strings.HasPrefix(line, "session start"):
			// Both of the jail's paths are timed alike, as whole session
			// starts in one loop with the bare spawn, and given as ratios.
			ratio := regexp.MustCompile(`^\d+(\.\d+)?(ms|µs|s) \(\d+\.\d\dx bare\)$`)
			if len(f) != 5 || !strings.Contains(f[0], "one loop") || !ratio.MatchString(f[1]) || !ratio.MatchString(f[2]) ||
				!strings.HasSuffix(f[4], "(bare python -c pass)") {
				t.Errorf("the start row should give both paths' medians with their ratio to the bare spawn: %q", line)
			}
		case strings.HasPrefix(line, "python:"):
			if strings.Contains(line, "(prefix )") {
				t.Errorf("an empty prefix shown: %q", line)
			}
		}
	}
	// With an engine (CI has one), the docker column is read back from it.
	if hostcap.Required(hostcap.Docker) && !strings.Contains(out, "docker session ready") {
		t.Errorf("doctor did not start a docker session:\n%s", out)
	}
}

// TestExecGrace: a block that masks its interrupt is reset once the grace
// period that --grace sets has passed, and says which period that was.
func TestExecGrace(t *testing.T) {
	masked := "import signal, time\nsignal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())\ntime.sleep(30)"
	for _, tc := range []struct{ flag, want string }{{"", "within 1s"}, {"300ms", "within 300ms"}} {
		args := []string{"exec", "--backend", "unsandboxed", "--timeout", "500ms"}
		if tc.flag != "" {
			args = append(args, "--grace", tc.flag)
		}
		_, _, errs := runCLI(t, "", append(args, "-c", masked)...)
		if !strings.Contains(errs, "did not stop "+tc.want) {
			t.Errorf("--grace %q: stderr %q, want a reset after the grace period (%q)", tc.flag, errs, tc.want)
		}
	}
}

// TestExecDocker runs blocks in the Docker backend when an engine is there
// (CI has one); the flags that belong to other backends are refused.
func TestExecDocker(t *testing.T) {
	if code, _, errs := runCLI(t, "", "exec", "--backend", "jail", "--image", "x", "-c", "pass"); code != 2 || !strings.Contains(errs, "--image is for --backend docker") {
		t.Errorf("--image with the jail: exit %d, %q", code, errs)
	}
	if os.Getenv("DOCKER_HOST") == "" {
		hostcap.Missing(t, hostcap.Docker, "DOCKER_HOST is not set")
	}
	code, out, errs := runCLI(t, "", "exec", "--backend", "docker", "-c", "import os; x = os.getuid()", "-c", "print(x)")
	if code != 0 || out != "1000\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, _, errs = runCLI(t, "", "exec", "--backend", "docker", "--image", "codemode-no-such-image:never", "-c", "pass")
	if code == 0 || !strings.Contains(errs, "make image") {
		t.Errorf("a missing image: exit %d, stderr %q; want it to say `make image`", code, errs)
	}
}
