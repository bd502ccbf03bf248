package render

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
	"google.golang.org/genai"
)

var update = flag.Bool("update", false, "rewrite the wanted outputs of render/testdata/*.txtar")

// A golden case is a txtar archive under testdata/ with these files:
//
//	reason        why the case exists (required)
//	decls.json    a JSON array of declarations, each with an optional namespace
//	budget        optional block budget (default: DefaultBudget)
//	env.json      optional Environment
//	shared.json   optional JSON array of SharedParameter
//	discovery     optional; when present, the files behind search and
//	              describe (DiscoveryFile, DiscoveryIndex, DiscoveryDocs)
//	              are compared too. Other cases leave them out, as the
//	              module is the same in every case.
//	markdown      optional; when present, the Markdown docs
//	              (want/catalog.md) are compared too, and parsed with
//	              goldmark: a section per tool with its signature, and
//	              example calls that Python compiles.
//	want/...      wanted outputs: the stub files (want/tools/...), the
//	              catalogs (want/catalog.full, want/catalog.signatures,
//	              want/catalog.names), the block
//	              (want/block) or, for a failing surface, want/error
type goldenCase struct {
	path    string
	archive *txtar.Archive
	files   map[string]string
}

func loadCases(t *testing.T) []goldenCase {
	t.Helper()
	paths, err := filepath.Glob("testdata/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no golden cases in testdata/")
	}
	var out []goldenCase
	for _, p := range paths {
		ar, err := txtar.ParseFile(p)
		if err != nil {
			t.Fatal(err)
		}
		c := goldenCase{path: p, archive: ar, files: map[string]string{}}
		for _, f := range ar.Files {
			c.files[f.Name] = string(f.Data)
		}
		out = append(out, c)
	}
	return out
}

// declEntry mirrors the --decls file format of the codemode command.
type declEntry struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description"`
	Parameters           json.RawMessage `json:"parameters"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
	Response             json.RawMessage `json:"response"`
	ResponseJSONSchema   json.RawMessage `json:"responseJsonSchema"`
	Namespace            string          `json:"namespace"`
	ResultKey            string          `json:"resultKey"`
	// Typed asks for Parameters and Response to be decoded into a
	// genai.Schema, the way a Go program declares them, instead of being
	// passed as raw JSON.
	Typed bool `json:"typed"`
}

func decodeTools(t testing.TB, data string) []Tool {
	t.Helper()
	var entries []declEntry
	if err := json.Unmarshal([]byte(data), &entries); err != nil {
		t.Fatalf("decls.json: %v", err)
	}
	var tools []Tool
	for _, e := range entries {
		decl := &genai.FunctionDeclaration{Name: e.Name, Description: e.Description}
		switch {
		case len(e.ParametersJSONSchema) > 0:
			decl.ParametersJsonSchema = e.ParametersJSONSchema
		case len(e.Parameters) > 0 && e.Typed:
			decl.Parameters = new(genai.Schema)
			if err := json.Unmarshal(e.Parameters, decl.Parameters); err != nil {
				t.Fatalf("decls.json: %s: %v", e.Name, err)
			}
		case len(e.Parameters) > 0:
			decl.ParametersJsonSchema = e.Parameters
		}
		switch {
		case len(e.ResponseJSONSchema) > 0:
			decl.ResponseJsonSchema = e.ResponseJSONSchema
		case len(e.Response) > 0 && e.Typed:
			decl.Response = new(genai.Schema)
			if err := json.Unmarshal(e.Response, decl.Response); err != nil {
				t.Fatalf("decls.json: %s: %v", e.Name, err)
			}
		case len(e.Response) > 0:
			decl.ResponseJsonSchema = e.Response
		}
		tools = append(tools, Tool{Namespace: e.Namespace, Declaration: decl, ResultKey: e.ResultKey})
	}
	return tools
}

// renderCase produces every output of a case, keyed like its want/ files.
func renderCase(t testing.TB, c goldenCase) map[string]string {
	t.Helper()
	got := map[string]string{}
	var shared []SharedParameter
	if s := c.files["shared.json"]; s != "" {
		if err := json.Unmarshal([]byte(s), &shared); err != nil {
			t.Fatalf("shared.json: %v", err)
		}
	}
	reg, err := NewRegistry(decodeTools(t, c.files["decls.json"]), shared...)
	if err != nil {
		got["want/error"] = err.Error() + "\n"
		return got
	}
	_, withDiscovery := c.files["discovery"]
	for _, f := range reg.Stubs() {
		switch f.Path {
		case DiscoveryFile, DiscoveryIndex, DiscoveryDocs:
			if !withDiscovery {
				continue
			}
		}
		got["want/"+f.Path] = f.Content
	}
	if _, ok := c.files["markdown"]; ok {
		got["want/catalog.md"] = reg.Markdown()
	}
	got["want/catalog.full"] = reg.Catalog(Full) + "\n"
	got["want/catalog.signatures"] = reg.Catalog(Signatures) + "\n"
	got["want/catalog.names"] = reg.Catalog(Names) + "\n"
	budget := DefaultBudget
	if b := strings.TrimSpace(c.files["budget"]); b != "" {
		budget, err = strconv.Atoi(b)
		if err != nil {
			t.Fatalf("budget: %v", err)
		}
	}
	var env Environment
	if e := c.files["env.json"]; e != "" {
		if err := json.Unmarshal([]byte(e), &env); err != nil {
			t.Fatalf("env.json: %v", err)
		}
	}
	got["want/block"] = reg.Block(env, budget) + "\n"
	return got
}

func TestGolden(t *testing.T) {
	for _, c := range loadCases(t) {
		name := strings.TrimSuffix(filepath.Base(c.path), ".txtar")
		t.Run(name, func(t *testing.T) {
			if strings.TrimSpace(c.files["reason"]) == "" {
				t.Fatalf("%s: a golden case needs a non-empty reason section", c.path)
			}
			got := renderCase(t, c)
			if *update {
				writeCase(t, c, got)
				return
			}
			want := map[string]string{}
			for k, v := range c.files {
				if strings.HasPrefix(k, "want/") {
					want[k] = v
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: outputs differ (-want +got):\n%s\nrun go test ./render -run TestGolden -update to accept", c.path, diff)
			}
			if md, ok := got["want/catalog.md"]; ok {
				checkMarkdownSections(t, c, md)
			}
		})
	}
}

func writeCase(t *testing.T, c goldenCase, got map[string]string) {
	t.Helper()
	ar := &txtar.Archive{Comment: c.archive.Comment}
	for _, f := range c.archive.Files {
		if !strings.HasPrefix(f.Name, "want/") {
			ar.Files = append(ar.Files, f)
		}
	}
	names := make([]string, 0, len(got))
	for k := range got {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		ar.Files = append(ar.Files, txtar.File{Name: k, Data: []byte(got[k])})
	}
	if err := os.WriteFile(c.path, txtar.Format(ar), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGoldenStubsCompile runs every generated stub of every golden case
// through Python's own parser and compiler, in one process.
func TestGoldenStubsCompile(t *testing.T) {
	py := newPyChecker(t)
	n := 0
	for _, c := range loadCases(t) {
		for name, src := range renderCase(t, c) {
			switch {
			case name == "want/catalog.md":
				// The example calls, each a Python expression.
				var calls []string
				for _, sec := range parseSections(t, src, 3) {
					if sec.example != "" {
						calls = append(calls, sec.example)
					}
				}
				sort.Strings(calls)
				src = strings.Join(calls, "")
			case strings.HasPrefix(name, "want/catalog."):
				// A catalog is Python too: comments, imports, and
				// functions whose bodies are docstrings and ellipses.
			case name == "want/block":
				src = toolsPackage(src)
			case !strings.HasSuffix(name, ".py"):
				continue
			}
			n++
			if msg := py.check(t, c.path+":"+name, src); msg != "" {
				t.Errorf("%s: %s does not compile: %s\n%s", c.path, name, msg, src)
			}
		}
	}
	if n == 0 {
		t.Fatal("no stubs compiled")
	}
}

// checkMarkdownSections parses a case's Markdown docs and checks that each
// tool has its section, headed by its signature, and that an example call
// calls the tool.
func checkMarkdownSections(t *testing.T, c goldenCase, md string) {
	t.Helper()
	reg, err := NewRegistry(decodeTools(t, c.files["decls.json"]))
	if err != nil {
		t.Fatal(err)
	}
	sections := parseSections(t, md, 3)
	for _, e := range reg.Entries() {
		s, ok := sections[e.Path]
		if !ok {
			t.Errorf("%s: no Markdown section for %s", c.path, e.Path)
			continue
		}
		if !strings.HasPrefix(s.signature, "def "+e.Attr+"(") {
			t.Errorf("%s: %s: signature %q", c.path, e.Path, s.signature)
		}
		if s.example != "" && !strings.HasPrefix(s.example, e.Attr+"(") {
			t.Errorf("%s: %s: example call %q does not call the tool", c.path, e.Path, s.example)
		}
	}
}

// toolsPackage returns the content of the block's tools-package element.
func toolsPackage(block string) string {
	_, rest, ok := strings.Cut(block, "  <tools-package>\n")
	if !ok {
		return ""
	}
	text, _, _ := strings.Cut(rest, "\n  </tools-package>")
	if !strings.HasPrefix(text, "#") {
		return "" // the pointer tier is prose
	}
	return text
}

// TestGoldenCasesHaveReasons guards the rule that every case states why it
// exists, independently of TestGolden's per-case check.
func TestGoldenCasesHaveReasons(t *testing.T) {
	for _, c := range loadCases(t) {
		if strings.TrimSpace(c.files["reason"]) == "" {
			t.Errorf("%s has no reason", c.path)
		}
		if _, ok := c.files["decls.json"]; !ok {
			t.Errorf("%s has no decls.json", c.path)
		}
	}
}
