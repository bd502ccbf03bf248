package escapeprobe

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/transport"
)

//go:embed prelude.py
var prelude string

// MarkVariable is the host environment variable Run sets to a random
// mark that no process in the sandbox may see.
const MarkVariable = "CODEMODE_ESCAPE_MARK"

// plant is what Run puts on the host for the probes to look for.
type plant struct {
	Secrets   []string `json:"secrets"`   // files only the host can read
	Mark      string   `json:"mark"`      // the value of MarkVariable
	Listeners [][2]any `json:"listeners"` // host loopback listeners: address, port
}

// result is the last line a probe prints: what worked, and how many
// things it tried.
type result struct {
	Holes   []string `json:"holes"`
	Checked int      `json:"checked"`
	Error   string   `json:"error"` // the probe itself failed
}

// Run plants secrets, a variable and loopback listeners on the host, then
// opens a session with open and runs every probe in it, one block each.
// Each hole a probe finds fails its subtest, naming what worked and what
// containment means; so does a probe that checked nothing. Run sets a
// variable in the process environment, so the calling test must not be
// parallel.
func Run(t *testing.T, open func(t *testing.T) transport.Session) {
	p := plantOnHost(t)
	s := open(t)
	for _, probe := range Probes {
		t.Run(probe.Name, func(t *testing.T) {
			res, err := try(s, p, probe)
			if err != nil {
				t.Fatal(err)
			}
			if res.Checked == 0 {
				t.Error("the probe checked nothing")
			}
			t.Logf("%d attempts, %d holes", res.Checked, len(res.Holes))
			for _, h := range res.Holes {
				t.Errorf("hole: %s (containment: %s)", h, probe.Containment)
			}
		})
	}
}

// try runs probe in s and returns what it found.
func try(s transport.Session, p plant, probe Probe) (result, error) {
	var res result
	line, err := json.Marshal(p)
	if err != nil {
		return res, err
	}
	literal, err := json.Marshal(string(line)) // a JSON string is a Python string literal
	if err != nil {
		return res, err
	}
	body, err := json.Marshal(probe.Code)
	if err != nil {
		return res, err
	}
	code := strings.Replace(prelude, "__PLANT__", string(literal), 1) + "\nrun_probe(" + string(body) + ")\n"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := s.Exec(ctx, transport.Block{Code: code, Timeout: time.Minute})
	if err != nil {
		return res, fmt.Errorf("probe %s: %w", probe.Name, err)
	}
	out := strings.TrimSpace(r.Stdout)
	last := out[strings.LastIndexByte(out, '\n')+1:]
	if r.ExitCode != 0 || json.Unmarshal([]byte(last), &res) != nil {
		return res, fmt.Errorf("probe %s did not finish (exit %d, reset %v): stdout %q, stderr %q", probe.Name, r.ExitCode, r.Reset, r.Stdout, r.Stderr)
	}
	if res.Error != "" {
		return res, fmt.Errorf("probe %s failed: %s", probe.Name, res.Error)
	}
	return res, nil
}

// plantOnHost makes the host-side objects, removed when the test ends.
func plantOnHost(t *testing.T) plant {
	t.Helper()
	var p plant
	p.Mark = "codemode-mark-" + randomHex(t)
	t.Setenv(MarkVariable, p.Mark)
	dirs := []string{os.TempDir()}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, home)
	}
	for _, dir := range dirs {
		f, err := os.CreateTemp(dir, "codemode-escape-secret-*")
		if err != nil {
			continue // a home that cannot be written: the other secret still counts
		}
		_, werr := f.WriteString("secret " + p.Mark)
		if cerr := f.Close(); werr != nil || cerr != nil {
			t.Fatal(werr, cerr)
		}
		t.Cleanup(func() { _ = os.Remove(f.Name()) })
		p.Secrets = append(p.Secrets, f.Name())
	}
	if len(p.Secrets) == 0 {
		t.Fatal("no secret file could be written on the host")
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue // no IPv6 loopback on this host
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		a := ln.Addr().(*net.TCPAddr)
		p.Listeners = append(p.Listeners, [2]any{a.IP.String(), a.Port})
	}
	if len(p.Listeners) == 0 {
		t.Fatal("no loopback listener could be opened on the host")
	}
	return p
}

func randomHex(t *testing.T) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
