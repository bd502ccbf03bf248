// Command fromv2 writes the ADK Go v1 adapters from the v2 ones: the
// packages of the root module built on ADK (plugin/codemode, callbacks,
// toolset/openapi, internal/host/hooklink) are the one
// implementation, written against google.golang.org/adk/v2, and adkv1/
// holds what they become against google.golang.org/adk v1.7. After changing any of them, run
// `go generate ./internal/fromv2` in adkv1 (or make generate) and review
// the diff; TestUpToDate fails while the two disagree.
//
// The translation is textual and small: import paths move to the v1
// module, and ADK v2's one agent.Context becomes v1's agent.ToolContext,
// except where callbackContexts say it is a callback's and becomes
// agent.CallbackContext. A short list of edits covers the remaining API
// differences. Every listed place and edit must apply where it is
// written, so one that no longer matches the v2 source fails the
// generation instead of silently leaving v2 code behind. A few test files
// that check the shared core rather than an adapter (v2Only) are not
// translated.
package main

//go:generate go run .

import (
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// module is the root module's path; the v1 module's is module + "/adkv1".
const module = "github.com/adk-codemode/codemode"

// packages are the directories of the root module translated to adkv1/,
// each with everything below it: the ADK Go v2 adapters.
//
// The demo agent (cmd/codemode-demo) is not among them: it is a program
// to try Code Mode with, the same on either line, and the behaviours a
// line must show are checked by the suite both lines run.
var packages = []string{
	"plugin/codemode",
	"callbacks",
	"toolset/openapi",
	"internal/host/hooklink",
}

// perLine are the files written for each ADK line by hand: the v2 file is
// not translated, and adkv1 keeps its own.
var perLine = map[string]bool{
	"plugin/codemode/adkline.go": true,
	// The package's documentation says what differs and refers to the v2
	// package's for the rest, rather than repeating it.
	"plugin/codemode/doc.go": true,
}

// v2Only are test files, or directories of tests (ending in a slash), of
// the v2 adapters that are not translated: what
// they check is not an adapter's but the shared core's (a backend, the
// telemetry export, the engine under a long soak) or a figure of it (a
// benchmark), which a second run on the v1 line would tell nothing new
// about. The behaviour tests of the adapters run on both lines.
var v2Only = map[string]string{
	"plugin/codemode/bench_test.go":         "benchmarks of the jail's start and of search in a sandbox, from an ADK program",
	"plugin/codemode/observe_bench_test.go": "benchmarks of a tool call and a block with tracing on",
	"plugin/codemode/artifact_cost_test.go": "a benchmark of saving tool results as artifacts",
	"plugin/codemode/soak_test.go":          "the engine and the jail under 150 turns of hostile code",
	"plugin/codemode/docker_e2e_test.go":    "the Docker backend, through a turn",
	"plugin/codemode/remote_e2e_test.go":    "the remote backend, through a turn",
	"plugin/codemode/otlp_test.go":          "OpenTelemetry's OTLP/HTTP export of a turn's spans",
	"plugin/codemode/durable_e2e_test.go":   "durable blocks across processes (SIGKILL, replicas) on ADK v2's database session service over SQLite and GCS artifact service; the v1 line resumes after a restart in the suite's Durable tests",
	"toolset/openapi/e2e/":                  "the OpenAPI core (package openapi) with real documents, through a turn; the v1 toolset's own code is checked by its toolset_test.go",
}

// keptToV2 reports whether the file at rel, a path from the repository's
// root, is in v2Only or below a directory listed there.
func keptToV2(rel string) bool {
	for k := range v2Only {
		if k == rel || strings.HasSuffix(k, "/") && strings.HasPrefix(rel, k) {
			return true
		}
	}
	return false
}

// edit is one textual change to one v2 file.
type edit struct {
	file     string // path from the repository's root
	old, new string
}

// callbackContexts are the places, by file and a snippet of the text
// around them, where the v2 source's agent.Context is what ADK v1 calls
// agent.CallbackContext: v1 hands callbacks of agents and models a
// context of their own. Every other agent.Context is a tool's.
var callbackContexts = []edit{
	{file: "plugin/codemode/codemode.go", old: "func (h *hookSet) BeforeModel(ctx agent.Context,"},
	{file: "plugin/codemode/codemode.go", old: "func (h *hookSet) AfterAgent(ctx agent.Context)"},
	{file: "plugin/codemode/codemode.go", old: "func (h *hookSet) afterRootAgent(ctx agent.Context)"},
	{file: "plugin/codemode/config.go", old: "OnArtifactsSaved func(ctx agent.Context,"},
	{file: "plugin/codemode/engine.go", old: "func (e *engine) prepare(ctx agent.Context,"},
	{file: "plugin/codemode/engine.go", old: "func withArtifacts(ctx agent.Context)"},
	{file: "plugin/codemode/hooks.go", old: "func runHooks(ctx agent.Context,"},
	{file: "plugin/codemode/adk_test.go", old: "beforeModel := func(ctx agent.Context,"},
	{file: "plugin/codemode/hooks_test.go", old: "type fakeCallbackContext struct{ agent.Context }"},
	{file: "plugin/codemode/suite_test.go", old: "cfg.OnArtifactsSaved = func(ctx agent.Context,"},
}

// edits are the v1 API differences the general rewrites do not cover,
// made before them.
var edits = []edit{
	// v1's tool context embeds the CallbackContext under its type's name.
	{"plugin/codemode/toolcontext.go", "Context: exec.parent,", "ToolContext: exec.parent,"},
	// v2's Context also carries the invocation's methods, which the test
	// fake takes from ADK's strict mock; v1's tool context has none.
	{"plugin/codemode/unit_test.go", "type fakeCtx struct {\n\tagent.StrictContextMock\n", "type fakeCtx struct {\n\tcontext.Context\n"},
	{"plugin/codemode/unit_test.go", "&fakeCtx{StrictContextMock: agent.StrictContextMock{Ctx: ctx},", "&fakeCtx{Context: ctx,"},
}

// generatedHeader marks a Go file as written by this command.
func generatedHeader(from string) string {
	return "// Code generated by adkv1/internal/fromv2 from " + from + "; DO NOT EDIT.\n\n"
}

// rewrite applies the general rewrites to one file's text, after the
// edits and the callback contexts.
func rewrite(src string) string {
	pairs := []string{"google.golang.org/adk/v2/", "google.golang.org/adk/"}
	for _, p := range packages {
		pairs = append(pairs, module+"/"+p, module+"/adkv1/"+p)
	}
	src = strings.NewReplacer(pairs...).Replace(src)
	src = agentContext.ReplaceAllString(src, "agent.ToolContext")
	// Callback contexts were marked by translate.
	return strings.ReplaceAll(src, "agent.callbackContext", "agent.CallbackContext")
}

// agentContext matches ADK v2's context type in Go source.
var agentContext = regexp.MustCompile(`\bagent\.Context\b`)

// apply makes each edit of file in text; used counts the edits applied.
func apply(text, file string, list []edit, used []int, change func(edit) string) (string, error) {
	for i, e := range list {
		if e.file != file {
			continue
		}
		if !strings.Contains(text, e.old) {
			return "", fmt.Errorf("%s: %q is not there any more; update adkv1/internal/fromv2", file, e.old)
		}
		text = strings.ReplaceAll(text, e.old, change(e))
		used[i]++
	}
	return text, nil
}

// translate returns the v1 tree made from the v2 tree at root (the
// repository's root): file paths below adkv1 and their contents.
func translate(root string) (map[string][]byte, error) {
	out := map[string][]byte{}
	usedEdits := make([]int, len(edits))
	usedCallbacks := make([]int, len(callbackContexts))
	for _, pkg := range packages {
		dir := filepath.Join(root, filepath.FromSlash(pkg))
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			if keptToV2(rel) || perLine[rel] {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if !strings.HasSuffix(rel, ".go") || strings.Contains(rel, "/testdata/") {
				out[rel] = data
				return nil
			}
			text, err := apply(string(data), rel, edits, usedEdits, func(e edit) string { return e.new })
			if err != nil {
				return err
			}
			text, err = apply(text, rel, callbackContexts, usedCallbacks, func(e edit) string {
				return strings.ReplaceAll(e.old, "agent.Context", "agent.callbackContext")
			})
			if err != nil {
				return err
			}
			src, err := format.Source([]byte(generatedHeader(rel) + rewrite(text)))
			if err != nil {
				return fmt.Errorf("%s: the translation is not valid Go: %w", rel, err)
			}
			out[rel] = src
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	var errs []error
	for i, e := range edits {
		if usedEdits[i] == 0 {
			errs = append(errs, fmt.Errorf("%s: no such file for the edit from %q; update the edits in adkv1/internal/fromv2", e.file, e.old))
		}
	}
	for i, e := range callbackContexts {
		if usedCallbacks[i] == 0 {
			errs = append(errs, fmt.Errorf("%s: no such file for the callback context at %q; update adkv1/internal/fromv2", e.file, e.old))
		}
	}
	return out, errors.Join(errs...)
}

// generated walks the translated packages below v1 and calls f with each
// file's path relative to v1, skipping the per-line files.
func generated(v1 string, f func(rel, path string) error) error {
	for _, pkg := range packages {
		err := filepath.WalkDir(filepath.Join(v1, filepath.FromSlash(pkg)), func(path string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(v1, path)
			if err != nil || perLine[filepath.ToSlash(rel)] {
				return err
			}
			return f(filepath.ToSlash(rel), path)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// stale compares the tree with the v1 directory and returns the paths that
// differ, are missing or should not be there.
func stale(tree map[string][]byte, v1 string) ([]string, error) {
	var bad []string
	for rel, want := range tree {
		got, err := os.ReadFile(filepath.Join(v1, filepath.FromSlash(rel)))
		if err != nil || !bytes.Equal(got, want) {
			bad = append(bad, rel)
		}
	}
	err := generated(v1, func(rel, _ string) error {
		if _, ok := tree[rel]; !ok {
			bad = append(bad, rel)
		}
		return nil
	})
	sort.Strings(bad)
	return bad, err
}

// write replaces the v1 packages with the tree.
func write(tree map[string][]byte, v1 string) error {
	// Remove what the generator wrote before, keeping the per-line files.
	if err := generated(v1, func(_, path string) error { return os.Remove(path) }); err != nil {
		return err
	}
	for rel, data := range tree {
		path := filepath.Join(v1, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	// go generate runs this in its own directory, adkv1/internal/fromv2.
	tree, err := translate("../../..")
	if err == nil {
		err = write(tree, "../..")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fromv2:", err)
		os.Exit(1)
	}
}
