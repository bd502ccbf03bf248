package callbacks_test

import (
	"context"
	"fmt"
	"iter"
	"log"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"

	"github.com/adk-codemode/codemode/callbacks"
	"github.com/adk-codemode/codemode/plugin/codemode"
)

// echoModel answers with the names of the tools declared to it.
type echoModel struct{}

func (echoModel) Name() string { return "echo" }

func (echoModel) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		var names []string
		for _, t := range req.Config.Tools {
			for _, d := range t.FunctionDeclarations {
				names = append(names, d.Name)
			}
		}
		yield(&model.LLMResponse{Content: genai.NewContentFromText(fmt.Sprint("tools: ", names), genai.RoleModel)}, nil)
	}
}

func Example() {
	cb, err := callbacks.New(codemode.Config{
		// Keep the system instruction as it is, so this example starts no
		// sandbox; by default the <code-mode> block is appended.
		DisableBlock: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer cb.Close()

	a, err := llmagent.New(llmagent.Config{
		Name:                 "assistant",
		Model:                echoModel{},
		BeforeModelCallbacks: []llmagent.BeforeModelCallback{cb.BeforeModel},
		AfterAgentCallbacks:  []agent.AfterAgentCallback{cb.AfterAgent},
		OnToolErrorCallbacks: []llmagent.OnToolErrorCallback{cb.OnToolError},
	})
	if err != nil {
		log.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "example", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true})
	if err != nil {
		log.Fatal(err)
	}
	msg := genai.NewContentFromText("hello", genai.RoleUser)
	for ev, err := range r.Run(context.Background(), "user", "session", msg, agent.RunConfig{}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ev.Content.Parts[0].Text)
	}
	// Output: tools: [execute_code]
}
