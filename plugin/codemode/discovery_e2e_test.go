package codemode

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"google.golang.org/adk/v2/model"
)

// catalogSize is the size of GitHub's REST API as an OpenAPI toolset.
const catalogSize = 1223

// lastStdout is the stdout of the last execute_code result in req.
func lastStdout(req *model.LLMRequest) string {
	out := ""
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if fr := p.FunctionResponse; fr != nil && fr.Name == ToolName {
				out, _ = fr.Response["stdout"].(string)
			}
		}
	}
	return out
}

// blockTiers describes the tools package of a block: how many sections
// show full docstrings, signatures only or names only, or the pointer.
func blockTiers(block string) string {
	_, pkg, ok := strings.Cut(block, "<tools-package>\n")
	if !ok {
		return "no tools package"
	}
	pkg, _, _ = strings.Cut(pkg, "\n  </tools-package>")
	if !strings.Contains(pkg, "# tools") {
		return "pointer"
	}
	var full, sigs, names int
	for _, sec := range strings.Split(pkg, "\n# tools")[1:] {
		switch {
		case strings.Contains(sec, "    Args:"):
			full++
		case strings.Contains(sec, "\ndef "):
			sigs++
		default:
			names++
		}
	}
	return strconv.Itoa(full) + " full, " + strconv.Itoa(sigs) + " signatures, " + strconv.Itoa(names) + " names"
}

var (
	discoveryImport = regexp.MustCompile(`from (tools(?:\._discovery)?) import search, describe`)
	defLine         = regexp.MustCompile(`(?m)^def (\w+)\(\*, (.*)\) ->`)
)

// TestSearchDescribeCallAtScale runs a scripted model against a catalog of
// GitHub's size at the default budget. Its code learns everything from
// the block, search and describe: the module to import them from, the
// tool's dotted name, its import line and its required parameters.
func TestSearchDescribeCallAtScale(t *testing.T) {
	var mu sync.Mutex
	var calls []catalogCall
	toolsets := syntheticCatalog(catalogSize, &mu, &calls)
	// What the user asked for, as the model knows it.
	values := map[string]any{"owner": "octo-org", "repo": "hello-world", "issue_number": 42, "body": "Thanks, fixed in #43."}

	var block, module, found, describeText string
	fail := func(format string, args ...any) *genai.Content {
		t.Errorf(format, args...)
		return genai.NewContentFromText("giving up", genai.RoleModel)
	}
	m := newScript().on("thank the reporter of issue 42",
		func(req *model.LLMRequest) *genai.Content {
			text := systemText(req)
			start := strings.Index(text, "<code-mode>")
			if start < 0 {
				return fail("no <code-mode> block")
			}
			block = text[start:]
			mm := discoveryImport.FindStringSubmatch(block)
			if mm == nil {
				return fail("the block does not say how to import search and describe:\n%s", block)
			}
			module = mm[1]
			return run("import json\nfrom " + module + " import search\nprint(json.dumps(search(\"create a comment on an issue\", limit=5)))")(req)
		},
		func(req *model.LLMRequest) *genai.Content {
			var matches []map[string]string
			if err := json.Unmarshal([]byte(lastStdout(req)), &matches); err != nil || len(matches) == 0 {
				return fail("search printed %q: %v", lastStdout(req), err)
			}
			found = matches[0]["name"]
			return run("from " + module + " import describe\nprint(describe(" + strconv.Quote(found) + "))")(req)
		},
		func(req *model.LLMRequest) *genai.Content {
			describeText = lastStdout(req)
			importLine, _, _ := strings.Cut(describeText, "\n")
			def := defLine.FindStringSubmatch(describeText)
			if !strings.HasPrefix(importLine, "from tools.") || def == nil {
				return fail("describe printed no import line and signature:\n%s", describeText)
			}
			var args []string
			for _, p := range strings.Split(def[2], ", ") {
				name, _, _ := strings.Cut(p, ":")
				if strings.Contains(p, " = ") {
					continue // optional
				}
				v, ok := values[name]
				if !ok {
					return fail("the tool needs %q, which the user did not give", name)
				}
				b, _ := json.Marshal(v)
				args = append(args, name+"="+string(b))
			}
			return run("import json\n" + importLine + "\nprint(json.dumps(" + def[1] + "(" + strings.Join(args, ", ") + ")))")(req)
		},
		say("Done."),
	)
	f := newFixture(t, m, fixtureConfig{cfg: Config{Toolsets: toolsets, DisableToolResultArtifacts: true}})
	out := outputs(f.turn(t.Context(), "s1", "thank the reporter of issue 42"))
	t.Logf("block: %d characters at budget %d; tools package: %s", utf8.RuneCountInString(block), DefaultBlockBudget, blockTiers(block))
	if !strings.Contains(block, "search(query)") {
		t.Errorf("the block shows every tool in full (%s); the test needs a catalog that does not fit", blockTiers(block))
	}
	if utf8.RuneCountInString(block) > DefaultBlockBudget {
		t.Errorf("the block has %d characters, over the budget", utf8.RuneCountInString(block))
	}
	if found != "issues.create_comment" {
		t.Errorf("search ranked %q first, want issues.create_comment", found)
	}
	if len(out) != 3 {
		t.Fatalf("got %d execute_code results, want 3: %v", len(out), out)
	}
	want := []catalogCall{{Path: "issues.create_comment", Args: map[string]any{"owner": "octo-org", "repo": "hello-world", "issue_number": float64(42), "body": "Thanks, fixed in #43."}}}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s\ndescribe printed:\n%s", diff, describeText)
	}
	if got := out[2]["stdout"]; got != `{"id": 1, "ok": true, "operation": "create_comment"}`+"\n" {
		t.Errorf("the call printed %q", got)
	}
}
