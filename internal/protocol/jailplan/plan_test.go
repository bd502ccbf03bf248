//go:build linux

package jailplan

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

// pythonDriver runs a plan read from stdin with plan.py's run_plan and
// prints its reports, or its error, and its own pid.
const pythonDriver = `
import json, os, sys
try:
    out = {"reports": run_plan(json.load(sys.stdin))}
except PlanError as e:
    out = {"error": {"Op": e.op, "Errno": e.errno, "Msg": e.msg}}
out["pid"] = os.getpid()
print(json.dumps(out))
`

type outcome struct {
	Reports map[string]int64 `json:"reports"`
	Err     *Error           `json:"error"`
	PID     int              `json:"pid"`
}

// runBoth runs the plan that build makes under the Go interpreter, in
// this process, and under the Python one, in python3; build gets a
// directory of its own for each.
func runBoth(t *testing.T, build func(dir string) Plan) (goOut, pyOut outcome, goDir, pyDir string) {
	t.Helper()
	goDir, pyDir = t.TempDir(), t.TempDir()
	p := build(goDir)
	reports, err := p.Run()
	goOut = outcome{Reports: reports, PID: os.Getpid()}
	if err != nil {
		if !errors.As(err, &goOut.Err) {
			t.Fatalf("Run: %v", err)
		}
		goOut.Reports = nil
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		hostcap.Missing(t, hostcap.Python, "the Python interpreter runs plans in forked sessions: ", err)
	}
	p = build(pyDir)
	in, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-I", "-c", PythonSource+pythonDriver)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	if err := json.Unmarshal(out, &pyOut); err != nil {
		t.Fatalf("python's output %q: %v", out, err)
	}
	return goOut, pyOut, goDir, pyDir
}

func TestBothInterpretersRunAPlanAlike(t *testing.T) {
	payload := []byte("written through an iovec that points to its buffer\n")
	build := func(dir string) Plan {
		var b Builder
		b.Call("open the file", unix.SYS_OPENAT, Int(unix.AT_FDCWD), b.Str(filepath.Join(dir, "out")),
			Int(unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC), Int(0o600)).Reporting("opened")
		fd := Result(b.Last())
		data := b.Bytes(payload)
		iov := make([]byte, 16) // struct iovec: base, then length
		binary.NativeEndian.PutUint64(iov[8:], uint64(len(payload)))
		b.Call("write the file", unix.SYS_WRITEV, fd, b.Bytes(iov, Ptr{Off: 0, Buf: BufIndex(data)}), Int(1)).
			Expect(int64(len(payload))).Reporting("written")
		b.Call("close the file", unix.SYS_CLOSE, fd)
		b.Call("close it again", unix.SYS_CLOSE, fd).Allowing(int(unix.EBADF)).Reporting("again")
		b.Call("read the pid", unix.SYS_GETPID).Reporting("pid")
		return b.Plan()
	}
	g, p, gdir, pdir := runBoth(t, build)
	for _, o := range []struct {
		name string
		out  outcome
		dir  string
	}{{"go", g, gdir}, {"python", p, pdir}} {
		if o.out.Err != nil {
			t.Fatalf("%s: %v", o.name, o.out.Err)
		}
		got, err := os.ReadFile(filepath.Join(o.dir, "out"))
		if err != nil || !bytes.Equal(got, payload) {
			t.Errorf("%s wrote %q (%v), want %q", o.name, got, err, payload)
		}
		r := o.out.Reports
		if r["opened"] < 0 || r["written"] != int64(len(payload)) || r["again"] != -int64(unix.EBADF) || r["pid"] != int64(o.out.PID) {
			t.Errorf("%s reported %v; want a descriptor, %d written, -EBADF, pid %d", o.name, r, len(payload), o.out.PID)
		}
	}
}

func TestBothInterpretersStopAtTheFailingStep(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(dir string) Plan
		want  Error
	}{
		{"errno", func(dir string) Plan {
			var b Builder
			b.Call("create the file", unix.SYS_MKDIRAT, Int(unix.AT_FDCWD), b.Str(filepath.Join(dir, "first")), Int(0o700))
			b.Call("close a descriptor that is not open", unix.SYS_CLOSE, Int(-1))
			b.Call("never runs", unix.SYS_MKDIRAT, Int(unix.AT_FDCWD), b.Str(filepath.Join(dir, "second")), Int(0o700))
			return b.Plan()
		}, Error{Op: "close a descriptor that is not open", Errno: int(unix.EBADF), Msg: "bad file descriptor"}},
		{"result", func(dir string) Plan {
			var b Builder
			b.Call("create the file", unix.SYS_MKDIRAT, Int(unix.AT_FDCWD), b.Str(filepath.Join(dir, "first")), Int(0o700))
			b.Call("read the pid", unix.SYS_GETPID).Expect(0)
			b.Call("never runs", unix.SYS_MKDIRAT, Int(unix.AT_FDCWD), b.Str(filepath.Join(dir, "second")), Int(0o700))
			return b.Plan()
		}, Error{Op: "read the pid", Msg: "returned %d, want 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, p, gdir, pdir := runBoth(t, tc.build)
			for _, o := range []struct {
				name string
				out  outcome
				dir  string
			}{{"go", g, gdir}, {"python", p, pdir}} {
				want := tc.want
				want.Msg = strings.Replace(want.Msg, "%d", itoa(o.out.PID), 1)
				if o.out.Err == nil {
					t.Fatalf("%s: no error; want %v", o.name, want)
				}
				got := *o.out.Err
				if got.Op != want.Op || got.Errno != want.Errno || !strings.EqualFold(got.Msg, want.Msg) {
					t.Errorf("%s: error %+v, want %+v", o.name, got, want)
				}
				if _, err := os.Stat(filepath.Join(o.dir, "first")); err != nil {
					t.Errorf("%s: the step before the failure did not run: %v", o.name, err)
				}
				if _, err := os.Stat(filepath.Join(o.dir, "second")); err == nil {
					t.Errorf("%s: a step after the failure ran", o.name)
				}
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestValidate(t *testing.T) {
	step := func(args ...Arg) Step { return Step{Op: "op", NR: unix.SYS_GETPID, Args: args} }
	for _, tc := range []struct {
		name string
		p    Plan
		want string // in the error; "" for none
	}{
		{"empty", Plan{}, ""},
		{"fine", Plan{Bufs: []Buf{{Data: make([]byte, 16), Ptrs: []Ptr{{Off: 8, Buf: 0}}}},
			Steps: []Step{step(Int(1)), step(Result(0), Arg{kind: argBuf, v: 0})}}, ""},
		{"no op", Plan{Steps: []Step{{NR: 1}}}, "step 0 has no Op"},
		{"negative number", Plan{Steps: []Step{{Op: "op", NR: -1}}}, "system call number -1"},
		{"seven arguments", Plan{Steps: []Step{step(Int(1), Int(2), Int(3), Int(4), Int(5), Int(6), Int(7))}}, "7 arguments; at most 6"},
		{"missing buffer", Plan{Steps: []Step{step(Arg{kind: argBuf, v: 0})}}, "buffer 0 of 0"},
		{"own result", Plan{Steps: []Step{step(Result(0))}}, "the result of step 0, which does not run before it"},
		{"later result", Plan{Steps: []Step{step(Result(1)), step()}}, "the result of step 1"},
		{"pointer past the end", Plan{Bufs: []Buf{{Data: make([]byte, 12), Ptrs: []Ptr{{Off: 8, Buf: 0}}}}}, "a pointer at byte 8 of 12"},
		{"unaligned pointer", Plan{Bufs: []Buf{{Data: make([]byte, 16), Ptrs: []Ptr{{Off: 4, Buf: 0}}}}}, "a pointer at byte 4 of 16"},
		{"pointer to a missing buffer", Plan{Bufs: []Buf{{Data: make([]byte, 8), Ptrs: []Ptr{{Off: 0, Buf: 1}}}}}, "a pointer to buffer 1 of 1"},
		{"too many steps", Plan{Steps: make([]Step, MaxSteps+1)}, "4097 steps; at most 4096"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v; want an error with %q", err, tc.want)
			}
			if tc.want != "" {
				if _, err := tc.p.Run(); !errors.Is(err, ErrInvalid) {
					t.Errorf("Run: %v; want ErrInvalid", err)
				}
			}
		})
	}
}

func TestArgJSON(t *testing.T) {
	var b Builder
	b.Call("op", unix.SYS_GETPID, Int(uint64(1<<64-1)), b.Str("x"), Result(0))
	p := b.Plan()
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"args":[{"i":-1},{"b":0},{"r":0}]`) {
		t.Errorf("JSON %s; want the three kinds of argument", data)
	}
	var back Plan
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Steps[0].Args[0] != p.Steps[0].Args[0] || back.Steps[0].Args[1] != p.Steps[0].Args[1] || back.Steps[0].Args[2] != p.Steps[0].Args[2] {
		t.Errorf("round trip: %+v, want %+v", back.Steps[0].Args, p.Steps[0].Args)
	}
	for _, bad := range []string{`{}`, `{"i":1,"b":2}`, `{"x":1}`, `[1]`} {
		var a Arg
		if err := json.Unmarshal([]byte(bad), &a); err == nil {
			t.Errorf("%s decoded as an argument", bad)
		}
	}
}

func TestLockRefuses(t *testing.T) {
	filter := make([]byte, 8)
	for _, tc := range []struct {
		name string
		l    Lock
		want string
	}{
		{"no filter", Lock{}, "a seccomp filter of 0 bytes"},
		{"torn filter", Lock{Filter: make([]byte, 12)}, "a seccomp filter of 12 bytes"},
		{"absolute file", Lock{Filter: filter, Files: map[string][]byte{"/etc/x": nil}}, `file name "/etc/x"`},
		{"escaping file", Lock{Filter: filter, Files: map[string][]byte{"../x": nil}}, `file name "../x"`},
		{"unclean file", Lock{Filter: filter, Files: map[string][]byte{"a//b": nil}}, `file name "a//b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.l.Build(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Build: %v; want an error with %q", err, tc.want)
			}
		})
	}
	p, err := Lock{Filter: filter, Files: map[string][]byte{"a/b/c": []byte("x"), "a/d": nil}}.Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("a built plan: %v", err)
	}
}

// TestInterpreterKnowsNoKernelConstant keeps plan.py to placing arguments
// and checking results: every number a setup needs is in the plan.
func TestInterpreterKnowsNoKernelConstant(t *testing.T) {
	number := regexp.MustCompile(`\b(0[xX][0-9a-fA-F]+|\d+)\b`)
	for i, line := range strings.Split(PythonSource, "\n") {
		code, _, _ := strings.Cut(line, "#")
		for _, tok := range number.FindAllString(code, -1) {
			// 0 and 1: no errno, and libc's -1; 8: the least a buffer
			// holds, one pointer.
			if tok != "0" && tok != "1" && tok != "8" {
				t.Errorf("plan.py:%d holds the number %s; a plan carries its numbers", i+1, tok)
			}
		}
	}
}
