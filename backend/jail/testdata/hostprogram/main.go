// Command hostprogram is a program of a user's shape, outside the library's
// module and in one whose path (aaa.example/...) sorts before it: it
// opens jailed sessions and reports how long each start took, beside a
// bare python3 -c pass timed in the same loop, and what each session
// enforces. Built with the tag hostile it also links two packages whose
// initializers must never run in a sandbox: one exits unless a file that
// exists only on the host is there, one spends 40 ms. With the tag plugin
// it links the plugin, ADK and OpenTelemetry's SDK, as an agent does.
// TestHostProgramNeverRunsInTheSandbox and BenchmarkStartFromAProgram in
// backend/jail build and run it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/transport"
)

type report struct {
	StartsMS []float64        `json:"starts_ms"`
	BareMS   []float64        `json:"bare_ms"`
	Enforced jail.Enforcement `json:"enforced"`
	Output   string           `json:"output"`
}

func main() {
	start := flag.String("start", "forked", "forked or cold")
	n := flag.Int("n", 5, "sessions to open, one after another")
	python := flag.String("bare", "", "a Python interpreter to time `-c pass` of before each start")
	flag.Parse()
	if err := run(*start, *n, *python); err != nil {
		fmt.Fprintln(os.Stderr, "hostprogram:", err)
		os.Exit(1)
	}
}

func run(start string, n int, python string) error {
	be := &jail.Backend{Cold: start == "cold"}
	defer be.Close()
	ctx := context.Background()
	if !be.Cold {
		// The template starts with the first session: one session
		// before the timed ones.
		s, err := be.Open(ctx, transport.SessionConfig{})
		if err != nil {
			return err
		}
		s.Close()
	}
	var rep report
	for i := range n {
		if python != "" {
			t0 := time.Now()
			if err := exec.Command(python, "-c", "pass").Run(); err != nil {
				return err
			}
			rep.BareMS = append(rep.BareMS, ms(time.Since(t0)))
		}
		t0 := time.Now()
		s, err := be.Open(ctx, transport.SessionConfig{})
		if err != nil {
			return fmt.Errorf("session %d: %w", i, err)
		}
		rep.StartsMS = append(rep.StartsMS, ms(time.Since(t0)))
		js := s.(*jail.Session)
		if fb := js.Fallback(); fb != nil && !be.Cold {
			s.Close()
			return fmt.Errorf("session %d started cold: %w", i, fb)
		}
		rep.Enforced = js.Enforced()
		if i == 0 {
			r, err := s.Exec(ctx, transport.Block{Code: "print(6 * 7)"})
			if err != nil {
				s.Close()
				return fmt.Errorf("session %d: %w", i, err)
			}
			rep.Output = r.Stdout
		}
		if err := s.Close(); err != nil {
			return fmt.Errorf("session %d: close: %w", i, err)
		}
	}
	return json.NewEncoder(os.Stdout).Encode(rep)
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
