package render

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"
)

// discoveryTools is a small catalog with near neighbours, a raw name shared
// by two namespaces and a camel-cased raw name.
func discoveryTools() []Tool {
	obj := func(props ...string) map[string]any {
		p := map[string]any{}
		for _, name := range props {
			p[name] = map[string]any{"type": "string"}
		}
		return map[string]any{"type": "object", "properties": p}
	}
	decl := func(name, desc string, props ...string) *genai.FunctionDeclaration {
		return &genai.FunctionDeclaration{Name: name, Description: desc, ParametersJsonSchema: obj(props...)}
	}
	return []Tool{
		{Namespace: "issues", Declaration: decl("create", "Create an issue in a repository.", "owner", "repo", "title", "body")},
		{Namespace: "issues", Declaration: decl("list_for_repo", "List the issues of a repository, newest first.", "owner", "repo", "state")},
		{Namespace: "issues", Declaration: decl("create_comment", "Add a comment to an issue.", "owner", "repo", "issue_number", "body")},
		{Namespace: "repos", Declaration: decl("create", "Create a repository for the authenticated user.", "name", "private")},
		{Namespace: "repos", Declaration: decl("getBranchProtection", "Get the protection rules of a branch.", "owner", "repo", "branch")},
		{Namespace: "pulls", Declaration: decl("merge", "Merge a pull request.", "owner", "repo", "pull_number", "merge_method")},
		{Declaration: decl("get_weather", "Current weather for a city.", "city")},
	}
}

type driverAnswer struct {
	OK    json.RawMessage `json:"ok"`
	Error string          `json:"error"`
}

// runDiscovery writes reg's tools package to a temporary directory and runs
// the requests through its search and describe in /usr/bin/python3.
func runDiscovery(t *testing.T, reg *Registry, requests []map[string]any) []driverAnswer {
	t.Helper()
	py := pythonPath(t)
	dir := t.TempDir()
	for _, f := range reg.Stubs() {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.Content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in, err := json.Marshal(requests)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-I", "-B", filepath.Join("testdata", "python", "discovery_driver.py"), dir)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("discovery driver: %v\n%s", err, stderr.String())
	}
	var answers []driverAnswer
	if err := json.Unmarshal(out, &answers); err != nil {
		t.Fatalf("discovery driver output: %v\n%s", err, out)
	}
	if len(answers) != len(requests) {
		t.Fatalf("discovery driver answered %d of %d requests", len(answers), len(requests))
	}
	return answers
}

type match struct {
	Name    string `json:"name"`
	Import  string `json:"import"`
	Summary string `json:"summary"`
}

func TestSearchRanksTheCatalog(t *testing.T) {
	reg, err := NewRegistry(discoveryTools())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		query string
		limit int
		first string // the wanted best match
		n     int    // the wanted number of matches
	}{
		{query: "create an issue", first: "issues.create"},
		{query: "comment on an issue", first: "issues.create_comment"},
		{query: "create a repository for a user", first: "repos.create"},
		{query: "branch protection", first: "repos.getbranchprotection"},
		{query: "getBranchProtection", first: "repos.getbranchprotection"},
		{query: "merge pull requests", first: "pulls.merge"},
		{query: "weather in Paris", first: "get_weather"},
		{query: "weath", first: "get_weather"}, // a prefix of an indexed word
		{query: "list issues", limit: 1, first: "issues.list_for_repo", n: 1},
		{query: "the of and", n: 0}, // stopwords only
		{query: "zzzz", n: 0},
	}
	var reqs []map[string]any
	for _, c := range cases {
		r := map[string]any{"op": "search", "query": c.query}
		if c.limit > 0 {
			r["limit"] = c.limit
		}
		reqs = append(reqs, r)
	}
	reqs = append(reqs, reqs[0]) // the same query again
	answers := runDiscovery(t, reg, reqs)
	for i, c := range cases {
		a := answers[i]
		if a.Error != "" {
			t.Errorf("search(%q): %s", c.query, a.Error)
			continue
		}
		var got []match
		if err := json.Unmarshal(a.OK, &got); err != nil {
			t.Fatal(err)
		}
		if c.first == "" {
			if len(got) != c.n {
				t.Errorf("search(%q) = %v, want %d matches", c.query, got, c.n)
			}
			continue
		}
		if len(got) == 0 || got[0].Name != c.first {
			t.Errorf("search(%q) = %v, want %s first", c.query, got, c.first)
			continue
		}
		if c.n > 0 && len(got) != c.n {
			t.Errorf("search(%q) returned %d matches, want %d", c.query, len(got), c.n)
		}
		e, _ := reg.Lookup(got[0].Name)
		if got[0].Import != importLine(e) || got[0].Summary == "" {
			t.Errorf("search(%q)[0] = %+v, want import %q and a summary", c.query, got[0], importLine(e))
		}
	}
	if diff := cmp.Diff(string(answers[0].OK), string(answers[len(cases)].OK)); diff != "" {
		t.Errorf("the same query ranked differently (-first +second):\n%s", diff)
	}
	// "create an issue" also finds the other creators, below the issue one.
	var got []match
	_ = json.Unmarshal(answers[0].OK, &got)
	var names []string
	for _, m := range got {
		names = append(names, m.Name)
	}
	if len(names) < 3 || !strings.Contains(strings.Join(names, " "), "repos.create") {
		t.Errorf("search(\"create an issue\") = %v, want repos.create among the matches", names)
	}
}

func TestSearchRejectsBadArguments(t *testing.T) {
	reg, err := NewRegistry(discoveryTools())
	if err != nil {
		t.Fatal(err)
	}
	answers := runDiscovery(t, reg, []map[string]any{
		{"op": "search", "query": 3},
		{"op": "search", "query": "issue", "limit": 0},
		{"op": "search", "query": "issue", "limit": maxSearchLimit + 1},
		{"op": "search", "query": "issue", "limit": true},
		{"op": "bound", "bytes": 100},
	})
	want := []string{
		"TypeError: search: query must be a str",
		"ValueError: search: limit must be an int from 1 to 100, not 0",
		"ValueError: search: limit must be an int from 1 to 100, not 101",
		"ValueError: search: limit must be an int from 1 to 100, not True",
		"RuntimeError: the search index of the tools package is larger than 100 bytes",
	}
	for i, w := range want {
		if !strings.HasPrefix(answers[i].Error, w) {
			t.Errorf("answer %d = %+v, want an error starting %q", i, answers[i], w)
		}
	}
}

func TestDescribeReturnsTheFullEntry(t *testing.T) {
	reg, err := NewRegistry(discoveryTools())
	if err != nil {
		t.Fatal(err)
	}
	answers := runDiscovery(t, reg, []map[string]any{
		{"op": "describe", "name": "issues.create_comment"},
		{"op": "describe", "name": "getBranchProtection"}, // the raw name
		{"op": "describe_function", "module": "tools.pulls", "attr": "merge"},
		{"op": "describe", "name": "get_weather"},
		{"op": "describe", "name": "create"}, // shared by two namespaces
		{"op": "describe", "name": "issues.crate"},
		{"op": "describe", "name": "nothing_like_it"},
		{"op": "describe", "name": 7},
	})
	rendered := reg.render()
	for i, path := range []string{"issues.create_comment", "repos.getbranchprotection", "pulls.merge", "get_weather"} {
		e, _ := reg.Lookup(path)
		var idx int
		for j, x := range reg.entries {
			if x.Path == path {
				idx = j
			}
		}
		want := importLine(e) + "\n\n" + rendered[idx].catalogSig + "\n" + rendered[idx].docstring + "    ...\n"
		var got string
		if err := json.Unmarshal(answers[i].OK, &got); err != nil {
			t.Fatalf("describe %s: %+v", path, answers[i])
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("describe(%s) (-want +got):\n%s", path, diff)
		}
	}
	wantErr := []string{
		"LookupError: describe: 'create' names tools in several namespaces; pass one of 'issues.create', 'repos.create'",
		"LookupError: describe: no tool is named 'issues.crate'; did you mean 'issues.create'",
		"LookupError: describe: no tool is named 'nothing_like_it'; use search() to find it",
		"TypeError: describe: name must be a tool's name as a str",
	}
	for i, w := range wantErr {
		if a := answers[4+i]; !strings.HasPrefix(a.Error, w) {
			t.Errorf("answer %d = %+v, want an error starting %q", 4+i, a, w)
		}
	}
}

// TestSearchTermsMatchPython holds the Go tokenizer, which builds the
// index, to the discovery module's, which splits the query.
func TestSearchTermsMatchPython(t *testing.T) {
	reg, err := NewRegistry(discoveryTools())
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{
		"Create an issue in a repository.",
		"getBranchProtection", "HTTPServer listAllRepositories", "issues/create_comment",
		"addresses classes status analysis bus", "a b cc 1 22 x9", "Ünïcode naïve café Kelvin",
		"merge-method: squash|rebase", "", "The OF and", "repositories categories ies iess",
	}
	var reqs []map[string]any
	for _, s := range texts {
		reqs = append(reqs, map[string]any{"op": "terms", "text": s})
	}
	answers := runDiscovery(t, reg, reqs)
	for i, s := range texts {
		var got []string
		if err := json.Unmarshal(answers[i].OK, &got); err != nil {
			t.Fatalf("terms(%q): %+v", s, answers[i])
		}
		want := searchTerms(s, nil)
		if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b []string) bool { return strings.Join(a, " ") == strings.Join(b, " ") })); diff != "" {
			t.Errorf("terms(%q) differ (-go +python):\n%s", s, diff)
		}
	}
}

func TestDiscoveryGivesWayToATool(t *testing.T) {
	weather := &genai.FunctionDeclaration{Name: "get_weather", Description: "Current weather for a city."}
	for _, tc := range []struct {
		tool Tool
		want string
	}{
		{Tool{Declaration: &genai.FunctionDeclaration{Name: "search"}}, "tools._discovery"},
		{Tool{Declaration: &genai.FunctionDeclaration{Name: "describe"}}, "tools._discovery"},
		{Tool{Namespace: "search", Declaration: &genai.FunctionDeclaration{Name: "code"}}, "tools._discovery"},
		{Tool{Namespace: "web", Declaration: &genai.FunctionDeclaration{Name: "search"}}, "tools"},
		{Tool{Declaration: &genai.FunctionDeclaration{Name: "find"}}, "tools"},
	} {
		reg, err := NewRegistry([]Tool{tc.tool, {Declaration: weather}})
		if err != nil {
			t.Fatal(err)
		}
		what := tc.tool.Namespace + "." + tc.tool.Declaration.Name
		if got := reg.Discovery(); got != tc.want {
			t.Errorf("Discovery() with %s = %q, want %q", what, got, tc.want)
		}
		answers := runDiscovery(t, reg, []map[string]any{
			{"op": "root_exports"},
			{"op": "search", "query": "weather"},
		})
		if got := string(answers[0].OK); got != strconv.FormatBool(tc.want == "tools") {
			t.Errorf("with %s the root re-exports search and describe: %s (%s)", what, got, answers[0].Error)
		}
		if !strings.Contains(string(answers[1].OK), `"get_weather"`) {
			t.Errorf("with %s search does not work: %+v", what, answers[1])
		}
		block := reg.Block(Environment{Discovery: true}, 10)
		if !strings.Contains(block, "from "+tc.want+" import search, describe") {
			t.Errorf("with %s the block does not import from %s:\n%s", what, tc.want, block)
		}
	}
}

// FuzzJSONString holds the index's string encoder to encoding/json: what
// it writes decodes to the input, with invalid UTF-8 replaced.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"", `a"b\c`, "line\nbreak\x00\x1f", "café ✓", "\xff\xfe", "</script>&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var sb strings.Builder
		writeJSONString(&sb, s)
		var got string
		if err := json.Unmarshal([]byte(sb.String()), &got); err != nil {
			t.Fatalf("%q encodes to invalid JSON %s: %v", s, sb.String(), err)
		}
		if want := string([]rune(s)); got != want { // each invalid byte becomes U+FFFD
			t.Errorf("%q round-trips to %q", s, got)
		}
	})
}
