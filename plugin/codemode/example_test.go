package codemode_test

import (
	"context"
	"fmt"
	"iter"
	"log"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

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

type cityArgs struct {
	City string `json:"city"`
}

func Example() {
	weather, err := functiontool.New(functiontool.Config{Name: "get_weather", Description: "Current weather of a city."},
		func(_ agent.Context, a cityArgs) (map[string]any, error) {
			return map[string]any{"city": a.City, "temp_c": 18}, nil
		})
	if err != nil {
		log.Fatal(err)
	}

	// The tools go to Code Mode, not to the agent: the model calls them
	// from Python through execute_code.
	p, err := codemode.New(codemode.Config{
		Tools: []tool.Tool{weather},
		// Keep the system instruction as it is, so this example starts no
		// sandbox; by default the <code-mode> block is appended.
		DisableBlock: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	fmt.Println("plugin:", p.Name())

	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: echoModel{}})
	if err != nil {
		log.Fatal(err)
	}
	r, err := runner.New(runner.Config{
		AppName:           "example",
		Agent:             a,
		SessionService:    session.InMemoryService(),
		AutoCreateSession: true,
		PluginConfig:      runner.PluginConfig{Plugins: []*plugin.Plugin{p}},
	})
	if err != nil {
		log.Fatal(err)
	}
	msg := genai.NewContentFromText("What is the weather in Paris?", genai.RoleUser)
	for ev, err := range r.Run(context.Background(), "user", "session", msg, agent.RunConfig{}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ev.Content.Parts[0].Text)
	}
	// Output:
	// plugin: codemode
	// tools: [execute_code]
}

// Check starts one sandbox of the configured backend and runs a block in
// it, so that a mistake only a real sandbox shows (an interpreter that is
// not Python, a memory limit too small for it) reaches the developer at
// start. A setting that cannot be meant is refused before anything
// starts, as New refuses it.
func ExampleCheck() {
	err := codemode.Check(context.Background(), codemode.Config{Timeout: 30}) // 30ns: the unit is missing
	fmt.Println(err)
	// Output:
	// codemode: Config.Timeout is 30ns, under a millisecond: a duration is in nanoseconds, so write it with its unit, such as 30 * time.Second
}
