package codemode

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/adk-codemode/codemode/transport"

	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
)

// requestText is what the model reads of a request: the system
// instruction and every declared tool.
func requestText(t *testing.T, req *model.LLMRequest) string {
	t.Helper()
	var sb strings.Builder
	if req.Config != nil && req.Config.SystemInstruction != nil {
		for _, p := range req.Config.SystemInstruction.Parts {
			sb.WriteString(p.Text)
		}
		for _, gt := range req.Config.Tools {
			if gt == nil {
				continue
			}
			b, err := json.Marshal(gt.FunctionDeclarations)
			if err != nil {
				t.Fatal(err)
			}
			sb.Write(b)
		}
	}
	return sb.String()
}

// TestNoArtifactTextWithoutService: on a real runner without an artifact
// service the model reads nothing of artifacts (no tools, no parameters,
// no sentence) and code cannot import them; with one, it does. Either way
// the block says that the sandbox has no network.
func TestNoArtifactTextWithoutService(t *testing.T) {
	for _, withService := range []bool{false, true} {
		name := "without a service"
		if withService {
			name = "with a service"
		}
		t.Run(name, func(t *testing.T) {
			m := newScript().on("go", run(`from tools import fetch_report
print(len(fetch_report(size=3)["body"]))
try:
    from tools import save_artifact
    print("save_artifact importable")
except ImportError:
    print("no save_artifact")`), say("ok"))
			fc := fixtureConfig{cfg: Config{Tools: []tool.Tool{bigTool(t)}}}
			if withService {
				fc.artifacts = artifact.InMemoryService()
			}
			f := newFixture(t, m, fc)
			out := outputs(f.turn(t.Context(), "s", "go"))
			reqs := m.requests()
			if len(reqs) == 0 {
				t.Fatal("no model request")
			}
			text := requestText(t, reqs[0])
			mentions := strings.Contains(strings.ToLower(text), "artifact")
			if mentions != withService {
				t.Errorf("the model's request mentions artifacts: %v, want %v:\n%s", mentions, withService, text)
			}
			if !strings.Contains(text, "<network>"+transport.NoNetwork+"</network>") {
				t.Errorf("the block does not say the sandbox has no network:\n%s", text)
			}
			want := "3\nno save_artifact\n"
			if withService {
				want = "3\nsave_artifact importable\n"
			}
			if got := out[len(out)-1]["stdout"]; got != want {
				t.Errorf("stdout %q, want %q (stderr %q)", got, want, out[len(out)-1]["stderr"])
			}
		})
	}
}
