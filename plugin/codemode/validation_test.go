package codemode

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
)

// declTool is a runnable tool with a given declaration.
type declTool struct{ decl *genai.FunctionDeclaration }

func (d declTool) Name() string                                   { return d.decl.Name }
func (d declTool) Description() string                            { return d.decl.Description }
func (d declTool) IsLongRunning() bool                            { return false }
func (d declTool) Declaration() *genai.FunctionDeclaration        { return d.decl }
func (d declTool) Run(agent.Context, any) (map[string]any, error) { return map[string]any{}, nil }

func TestValidationSurvivesUncompilableKeywords(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })

	list := declTool{&genai.FunctionDeclaration{Name: "list_repos_validation_test", Description: "List repositories.",
		ParametersJsonSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"owner":    map[string]any{"type": "string", "pattern": "^(?!-)[A-Za-z0-9-]+$"},
				"filter":   map[string]any{"$ref": "https://schemas.example/filter.json"},
				"per_page": map[string]any{"type": "integer", "maximum": 100},
			},
		}}}
	for range 2 { // as for two invocations of a toolset
		s, err := buildSurface([]namespacedTool{{ns: "gh", t: list}}, surfaceOptions{})
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
