package callbacks_test

import (
	"context"
	"errors"
	"iter"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/callbacks"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/plugin/codemode"
	"github.com/adk-codemode/codemode/transport"
)

// replayModel replies with one execute_code call, then with text.
type replayModel struct{ code string }

func (replayModel) Name() string { return "replay" }

func (m replayModel) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		last := req.Contents[len(req.Contents)-1]
		if last.Parts[0].FunctionResponse != nil {
			yield(&model.LLMResponse{Content: genai.NewContentFromText("done", genai.RoleModel)}, nil)
			return
		}
		yield(&model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{
			FunctionCall: &genai.FunctionCall{Name: codemode.ToolName, Args: map[string]any{"code": m.code}},
		}}}}, nil)
	}
}

func TestCallbacksRunCodeThroughAgentCallbacks(t *testing.T) {
	b := &jail.Backend{}
	probeCtx, cancel := context.WithTimeout(t.Context(), time.Minute)
	s, err := b.Open(probeCtx, transport.SessionConfig{})
	cancel()
	if errors.Is(err, jail.ErrUnsupported) {
		hostcap.Missing(t, hostcap.UserNS, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()

	type args struct {
		N int `json:"n"`
	}
	double, err := functiontool.New(functiontool.Config{Name: "double", Description: "Double n."},
		func(_ agent.Context, a args) (map[string]any, error) { return map[string]any{"n": a.N * 2}, nil })
	if err != nil {
		t.Fatal(err)
	}
	cb, err := callbacks.New(codemode.Config{Tools: []tool.Tool{double}, Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	a, err := llmagent.New(llmagent.Config{
		Name:                 "assistant",
		Model:                replayModel{code: "from tools import double\nprint(double(n=2)['n'], double(n=13)['n'])"},
		BeforeModelCallbacks: []llmagent.BeforeModelCallback{cb.BeforeModel},
		AfterAgentCallbacks:  []agent.AfterAgentCallback{cb.AfterAgent},
		OnToolErrorCallbacks: []llmagent.OnToolErrorCallback{cb.OnToolError},
		BeforeToolCallbacks: []llmagent.BeforeToolCallback{func(ctx agent.Context, t tool.Tool, args map[string]any) (map[string]any, error) {
			if t.Name() == "double" && args["n"] == float64(13) {
				return map[string]any{"n": "unlucky"}, nil
			}
			return nil, nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "test", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	var got any
	for ev, err := range r.Run(t.Context(), "user", "s", genai.NewContentFromText("go", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionResponse != nil {
				got = p.FunctionResponse.Response["stdout"]
			}
		}
	}
	if diff := cmp.Diff("4 unlucky\n", got); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
}
