//go:build linux && amd64

package jail

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/adk-codemode/codemode/transport"
)

// selfPayload runs inside the jail when Spec.Self re-executes the test
// binary: it reports who and where it is.
func selfPayload() {
	host, _ := os.Hostname()
	wd, _ := os.Getwd()
	_ = json.NewEncoder(os.Stdout).Encode(map[string]any{
		"uid": os.Getuid(), "gid": os.Getgid(), "pid": os.Getpid(),
		"host": host, "wd": wd, "args": os.Args, "env": os.Environ(),
	})
}

// helperReport is what the "probe" host helper prints.
type helperReport struct {
	Unsupported    bool
	Err            string
	Stdout, Stderr string
	Enf            Enforcement
}

// probeInJail runs Python code in a default jail from this process.
func probeInJail(code string) helperReport {
	var rep helperReport
	bin, err := Config{}.Interpreter()
	if err != nil {
		rep.Err = err.Error()
		return rep
	}
	var out, errb bytes.Buffer
	c, err := Start(context.Background(), Config{}, Spec{Args: []string{bin, "-c", code}, Env: baseEnv(), Stdout: &out, Stderr: &errb})
	if err != nil {
		rep.Unsupported = errors.Is(err, ErrUnsupported)
		rep.Err = err.Error()
		return rep
	}
	rep.Enf = c.Enforced()
	if err := c.Wait(); err != nil {
		rep.Err = err.Error()
	}
	rep.Stdout, rep.Stderr = out.String(), errb.String()
	return rep
}

// hostHelper is a host process (a child of the test) that starts a jail:
//
//	sleepers MARKER: a jail with four sleepers whose argv carries MARKER;
//	  prints "init PID" and "ready", then waits to be SIGKILLed.
//	probe CODE: runs CODE in a jail and prints a helperReport as JSON.
func hostHelper(args []string) int {
	if len(args) != 2 {
		return 2
	}
	switch args[0] {
	case "probe":
		_ = json.NewEncoder(os.Stdout).Encode(probeInJail(args[1]))
		return 0
	case "sleepers":
		bin, err := Config{}.Interpreter()
		if err != nil {
			fmt.Println("unsupported")
			return 0
		}
		code := `
import subprocess, sys, time
for i in range(4):
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", sys.argv[1]])
print("ready", flush=True)
time.sleep(600)
`
		c, err := Start(context.Background(), Config{}, Spec{Args: []string{bin, "-c", code, args[1]},
			Env: baseEnv(), Stdout: os.Stdout, Stderr: os.Stderr})
		if errors.Is(err, ErrUnsupported) {
			fmt.Println("unsupported")
			return 0
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("init %d\n", c.Pid())
		_ = c.Wait()
		return 0
	case "forked-probe":
		_ = json.NewEncoder(os.Stdout).Encode(probeInForkedSession(args[1]))
		return 0
	case "forked-sleepers":
		// The same from a session forked from a template.
		s, err := (&Backend{forked: true}).Open(context.Background(), transport.SessionConfig{})
		if errors.Is(err, ErrUnsupported) {
			fmt.Println("unsupported")
			return 0
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		js := s.(*Session)
		if js.Fallback() != nil {
			fmt.Fprintln(os.Stderr, "started cold:", js.Fallback())
			return 1
		}
		zygotes.Lock()
		for _, z := range zygotes.live {
			fmt.Printf("template %d\n", z.cmd.Pid())
		}
		zygotes.Unlock()
		fmt.Printf("init %d\n", js.Pid())
		r, err := s.Exec(context.Background(), transport.Block{Code: fmt.Sprintf(`
import subprocess, sys
for i in range(4):
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", %q])
`, args[1])})
		if err != nil || r.ExitCode != 0 {
			fmt.Fprintln(os.Stderr, err, r)
			return 1
		}
		fmt.Println("ready")
		time.Sleep(600 * time.Second)
		return 0
	}
	return 2
}

// probeInForkedSession runs code in a session forked from a template.
func probeInForkedSession(code string) helperReport {
	var rep helperReport
	be := &Backend{forked: true}
	defer func() { _ = be.Close() }()
	s, err := be.Open(context.Background(), transport.SessionConfig{})
	if err != nil {
		rep.Unsupported = errors.Is(err, ErrUnsupported)
		rep.Err = err.Error()
		return rep
	}
	defer s.Close()
	js := s.(*Session)
	if fb := js.Fallback(); fb != nil {
		rep.Err = "started cold: " + fb.Error()
		return rep
	}
	rep.Enf = js.Enforced()
	r, err := s.Exec(context.Background(), transport.Block{Code: code, Timeout: 60 * time.Second})
	if err != nil {
		rep.Err = err.Error()
		return rep
	}
	rep.Stdout, rep.Stderr = r.Stdout, r.Stderr
	if r.ExitCode != 0 {
		rep.Err = fmt.Sprintf("exit code %d", r.ExitCode)
	}
	return rep
}
