package engine

import (
	"bytes"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/adk-codemode/codemode/schema"
)

func decl(name string, props map[string]any, required ...string) *genai.FunctionDeclaration {
	p := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		p["required"] = required
	}
	return &genai.FunctionDeclaration{Name: name, Description: "Does " + name + ".", ParametersJsonSchema: p}
}

// TestBuildSurface: tools are found by their dotted path and, when unique,
// by their raw name; code and texts name them as code calls them; with
// result artifacts every tool but a builtin takes the naming parameters,
// which PrepareArgs takes out again; arguments are validated against the
// declaration.
func TestBuildSurface(t *testing.T) {
	entries := []SurfaceEntry[string]{
		{Declaration: decl("save_artifact", map[string]any{"filename": map[string]any{"type": "string"}}), Builtin: true, Tool: "builtin"},
		{Declaration: decl("get-sum", map[string]any{"a": map[string]any{"type": "integer"}}, "a"), ResultKey: "result", Tool: "sum"},
		{Namespace: "files", Declaration: decl("list", map[string]any{"dir": map[string]any{"type": "string"}}), Tool: "list"},
	}
	s, err := BuildSurface(entries, true)
	if err != nil {
		t.Fatal(err)
	}
	sum, ok := s.Lookup("get-sum")
	if !ok || sum.Tool != "sum" || sum.Name != "get-sum" || sum.Code != "get_sum" || sum.ResultKey != "result" || !sum.SaveResult {
		t.Fatalf("get-sum: %+v, %v", sum, ok)
	}
	list, ok := s.Lookup("files.list_")
	if !ok || list.Tool != "list" || list.Code != "tools.files.list_" {
		t.Fatalf("files.list_: %+v, %v", list, ok)
	}
	builtin, ok := s.Lookup("save_artifact")
	if !ok || !builtin.Builtin || builtin.SaveResult {
		t.Fatalf("save_artifact: %+v, %v; want a builtin whose results are not saved", builtin, ok)
	}
	if _, ok := s.Lookup("nope"); ok {
		t.Error("an unknown name was found")
	}

	if stub := string(s.Files["tools/get_sum.py"]); !strings.Contains(stub, "artifact_name") {
		t.Errorf("get_sum's stub lacks the naming parameters:\n%.600s", stub)
	}
	if stub := string(s.Files["tools/save_artifact.py"]); stub == "" || strings.Contains(stub, "artifact_name") {
		t.Errorf("a builtin's stub has the naming parameters:\n%.600s", stub)
	}
	args, naming, err := sum.PrepareArgs(map[string]any{"a": 1, ParamArtifactName: "total", ParamArtifactDescription: "the sum"})
	if err != nil || naming != (ResultNaming{Name: "total", Description: "the sum"}) || len(args) != 1 || args["a"] != 1 {
		t.Errorf("PrepareArgs = %v, %+v, %v; want the naming arguments taken out", args, naming, err)
	}
	var ve *schema.ValidationError
	if _, _, err := sum.PrepareArgs(map[string]any{"a": "x"}); !errors.As(err, &ve) || ve.Tool != "get_sum" {
		t.Errorf("a bad argument: err = %v, want a ValidationError naming get_sum", err)
	}
	if _, _, err := sum.PrepareArgs(nil); err == nil {
		t.Error("a missing required argument passed")
	}

	if got := s.Direct([]string{"get-sum", "save_artifact", "nope"}); !slices.Equal(got, []string{"get-sum"}) {
		t.Errorf("Direct = %v, want the named tool, never a builtin", got)
	}
	if note := s.UnavailableNote(); note != "" {
		t.Errorf("a note with every toolset there: %q", note)
	}
	s.Unavailable = []string{"github"}
	if note := s.UnavailableNote(); !strings.Contains(note, "tools.github") {
		t.Errorf("UnavailableNote = %q", note)
	}
}

// TestWithNamingParams: the parameters are added to an object schema,
// not twice, and a declaration whose parameters are not an object schema
// is left as it is.
func TestWithNamingParams(t *testing.T) {
	d, name, desc := WithNamingParams(&genai.FunctionDeclaration{Name: "f"})
	props, _ := d.ParametersJsonSchema.(map[string]any)["properties"].(map[string]any)
	if !name || !desc || props[ParamArtifactName] == nil || props[ParamArtifactDescription] == nil {
		t.Errorf("no parameters: got %v (%v, %v)", d.ParametersJsonSchema, name, desc)
	}
	own := decl("g", map[string]any{ParamArtifactName: map[string]any{"type": "integer"}})
	d, name, desc = WithNamingParams(own)
	props, _ = d.ParametersJsonSchema.(map[string]any)["properties"].(map[string]any)
	if name || !desc || props[ParamArtifactName].(map[string]any)["type"] != "integer" {
		t.Errorf("a tool's own artifact_name was replaced: %v (%v, %v)", props, name, desc)
	}
	odd := &genai.FunctionDeclaration{Name: "h", ParametersJsonSchema: map[string]any{"properties": "not an object"}}
	if d, name, desc := WithNamingParams(odd); d != odd || name || desc {
		t.Errorf("an odd schema was changed: %v", d.ParametersJsonSchema)
	}
}

// TestValidationSurvivesUncompilableKeywords: a schema keyword the
// validator cannot compile (a lookahead in a pattern, a remote $ref) is
// left out with one warning per tool, and the rest of the schema is still
// enforced, on every surface built of the tool.
func TestValidationSurvivesUncompilableKeywords(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })

	list := &genai.FunctionDeclaration{Name: "list_repos_validation_test", Description: "List repositories.",
		ParametersJsonSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"owner":    map[string]any{"type": "string", "pattern": "^(?!-)[A-Za-z0-9-]+$"},
				"filter":   map[string]any{"$ref": "https://schemas.example/filter.json"},
				"per_page": map[string]any{"type": "integer", "maximum": 100},
			},
		}}
	for range 2 { // as for two invocations of a toolset
		s, err := BuildSurface([]SurfaceEntry[string]{{Namespace: "gh", Declaration: list}}, false)
		if err != nil {
			t.Fatal(err)
		}
		st := s.Tools["gh.list_repos_validation_test"]
		if st == nil || st.Validator == nil {
			t.Fatalf("tool %v has no validator", st)
		}
		for _, bad := range []map[string]any{{"per_page": "ten"}, {"per_page": 500}, {"owner": "-x"}} {
			if err := st.Validator.Validate(bad); err == nil {
				t.Errorf("arguments %v accepted", bad)
			}
		}
		if err := st.Validator.Validate(map[string]any{"owner": "go-x", "per_page": 10, "filter": "anything"}); err != nil {
			t.Errorf("valid arguments rejected: %v", err)
		}
	}
	logs := buf.String()
	if n := strings.Count(logs, "gh.list_repos_validation_test"); n != 1 {
		t.Errorf("tool logged %d times, want once:\n%s", n, logs)
	}
	for _, want := range []string{"level=WARN", "/properties/filter/$ref", "the rest is enforced"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}
