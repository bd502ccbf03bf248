package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/internal/testsupport/adksuite"
	"github.com/adk-codemode/codemode/internal/testsupport/sessionbench"
	"github.com/adk-codemode/codemode/render"
	"github.com/adk-codemode/codemode/transport"
	"google.golang.org/adk/v2/tool"
)

// BenchmarkJailColdStartInADKProgram is BenchmarkSessionColdStart of
// backend/jail run from a binary the size of an ADK agent (this test
// binary links ADK, genai, gRPC, OpenTelemetry and the rest), with no
// pool: "forked" (the default) forks each session from a template
// process, started before the timed loop, and "cold" starts each
// session's jail from scratch (jail.Backend.Cold). A cold jail
// re-executes the host binary, and its init runs every package
// initializer the program has before the jail's own hook: this shows what
// that costs an agent, and what forking saves it.
func BenchmarkJailColdStartInADKProgram(b *testing.B) {
	for _, forked := range []bool{false, true} {
		name := "cold"
		if forked {
			name = "forked"
		}
		b.Run(name, func(b *testing.B) {
			be := &jail.Backend{Cold: !forked}
			defer be.Close()
			py, err := be.Config.Interpreter()
			if err != nil {
				b.Skip(err)
			}
			// One session before the loop: it skips where the jail cannot
			// run, and starts the template of the forked case.
			s, err := be.Open(context.Background(), transport.SessionConfig{})
			if err != nil {
				b.Skip(err)
			}
			if err := s.(*jail.Session).Fallback(); forked && err != nil {
				b.Skipf("no template: %v", err)
			}
			s.Close()
			sessionbench.BenchOpenVsBare(b, py, be, nil)
		})
	}
}

// BenchmarkSearchInSandbox times search over a catalog of GitHub's size
// (1,223 tools) inside the jail, call by call with Python's clock, and
// reports the median call and the one-off loading of the index.
func BenchmarkSearchInSandbox(b *testing.B) {
	var mu sync.Mutex
	var calls []catalogCall
	var all []namespacedTool
	for _, ts := range syntheticCatalog(catalogSize, &mu, &calls) {
		tools, _ := ts.Tools(nil)
		for _, t := range tools {
			all = append(all, namespacedTool{ns: ts.Name(), t: t})
		}
	}
	s, err := buildSurface(all, surfaceOptions{})
	if err != nil {
		b.Fatal(err)
	}
	code, err := os.ReadFile(filepath.Join("testdata", "search_bench.py"))
	if err != nil {
		b.Fatal(err)
	}
	sess, err := (&jail.Backend{}).Open(context.Background(), transport.SessionConfig{Files: s.Files})
	if errors.Is(err, jail.ErrUnsupported) {
		b.Skip(err)
	}
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	var times []time.Duration
	var load time.Duration
	for b.Loop() {
		res, err := sess.Exec(context.Background(), transport.Block{Code: string(code)})
		if err != nil {
			b.Fatal(err)
		}
		var out struct {
			LoadNS  *int64  `json:"load_ns"`
			TimesNS []int64 `json:"times_ns"`
		}
		if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil {
			b.Fatalf("bench block printed %q (%s): %v", res.Stdout, res.Stderr, err)
		}
		if out.LoadNS != nil {
			load = time.Duration(*out.LoadNS)
		}
		for _, ns := range out.TimesNS {
			times = append(times, time.Duration(ns))
		}
	}
	b.ReportMetric(float64(sessionbench.Median(times).Microseconds())/1000, "search-median-ms")
	b.ReportMetric(float64(load.Microseconds())/1000, "index-load-ms")
	b.ReportMetric(float64(len(s.Files[render.DiscoveryIndex]))/1024, "index-KiB")
}

// catalogSize is the size of GitHub's REST API as an OpenAPI toolset.
const catalogSize = adksuite.CatalogSize

// catalogCall is one call of a tool of the synthetic catalog.
type catalogCall struct {
	Path string
	Args map[string]any
}

// syntheticCatalog returns the suite's catalog of n tools modelled on
// GitHub's REST API (adksuite.Catalog) as this line's toolsets, one per
// namespace; calls records every call.
func syntheticCatalog(n int, mu *sync.Mutex, calls *[]catalogCall) []tool.Toolset {
	var out []tool.Toolset
	for _, ts := range adksuite.Catalog(n, func(path string, args map[string]any) {
		mu.Lock()
		*calls = append(*calls, catalogCall{Path: path, Args: args})
		mu.Unlock()
	}) {
		var tools []tool.Tool
		for _, st := range ts.Tools {
			tools = append(tools, &declaredTool{decl: st.Declaration, run: st.Run})
		}
		out = append(out, staticToolset{name: ts.Name, tools: tools})
	}
	return out
}
