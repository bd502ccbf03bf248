package codemode

import (
	"context"
	"errors"
	"fmt"

	eng "github.com/adk-codemode/codemode/internal/host/engine"
	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/tool"
)

// ArtifactServiceUnavailableError is what an artifact tool called from code
// fails with when the runner has no artifact service; Python sees a
// ToolError whose type is "ArtifactServiceUnavailableError".
type ArtifactServiceUnavailableError struct {
	Tool string
}

func (e *ArtifactServiceUnavailableError) Error() string {
	return fmt.Sprintf("%s: no artifact service is configured for this agent, so artifacts cannot be saved, loaded or listed; keep data in variables or files for this turn instead", e.Tool)
}

// ArtifactNameError reports an artifact name or MIME type that
// save_artifact refuses.
type ArtifactNameError struct {
	Name   string
	Reason string
}

func (e *ArtifactNameError) Error() string {
	return fmt.Sprintf("artifact %q: %s", e.Name, e.Reason)
}

// artifactTool is one of the built-in artifact tools (engine.ArtifactTools)
// on ADK. Its Run wraps the value the code gets in {"result": value}, the
// shape functiontool gives non-map results, and says so (ResultKey); the
// dispatcher unwraps it.
type artifactTool struct{ eng.ArtifactTool }

var (
	_ tool.Tool    = (*artifactTool)(nil)
	_ runnableTool = (*artifactTool)(nil)
)

func (t *artifactTool) Name() string                            { return t.Decl.Name }
func (t *artifactTool) Description() string                     { return t.Decl.Description }
func (t *artifactTool) IsLongRunning() bool                     { return false }
func (t *artifactTool) Declaration() *genai.FunctionDeclaration { return t.Decl }
func (t *artifactTool) ResultKey() string                       { return "result" }

func (t *artifactTool) Run(ctx agent.Context, args any) (map[string]any, error) {
	a := artifactsOf(ctx)
	if a == nil {
		return nil, &ArtifactServiceUnavailableError{Tool: t.Decl.Name}
	}
	m, _ := args.(map[string]any)
	v, err := t.ArtifactTool.Run(ctx, artifactStore{a}, m)
	if r, ok := errors.AsType[*eng.ArtifactRefusal](err); ok {
		return nil, &ArtifactNameError{Name: r.Name, Reason: r.Reason}
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"result": v}, nil
}

// artifactTools returns the three built-in artifact tools.
func artifactTools() []tool.Tool {
	var out []tool.Tool
	for _, t := range eng.ArtifactTools() {
		out = append(out, &artifactTool{t})
	}
	return out
}

// artifactStore is a tool context's artifacts as the engine's artifact
// tools use them.
type artifactStore struct{ a agent.Artifacts }

func (s artifactStore) Save(ctx context.Context, name string, p *genai.Part) (int64, error) {
	resp, err := s.a.Save(ctx, name, p)
	if err != nil {
		return 0, err
	}
	return resp.Version, nil
}

func (s artifactStore) Load(ctx context.Context, name string, version int) (*genai.Part, error) {
	var resp *artifact.LoadResponse
	var err error
	if version > 0 {
		resp, err = s.a.LoadVersion(ctx, name, version)
	} else {
		resp, err = s.a.Load(ctx, name)
	}
	if err != nil {
		return nil, err
	}
	return resp.Part, nil
}

func (s artifactStore) List(ctx context.Context) ([]string, error) {
	resp, err := s.a.List(ctx)
	if err != nil {
		return nil, err
	}
	return resp.FileNames, nil
}
