package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"io"
	"os"
	"strings"
	"time"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/model/gemini"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/backend/unsandboxed"
	"github.com/adk-codemode/codemode/plugin/codemode"
	"github.com/adk-codemode/codemode/transport"
)

const task = "Which of Paris, Oslo and Lisbon is warmest right now? Give the temperatures in both Celsius and Fahrenheit."

func main() {
	modelName := flag.String("model", envOr("CODEMODE_MODEL", "gemini-2.5-flash"), "Gemini model to use when GOOGLE_API_KEY is set")
	backendName := flag.String("backend", "jail", "sandbox backend: jail, or unsandboxed (development only, no isolation)")
	prompt := flag.String("prompt", task, "the task for the agent (a live model only; the scripted model knows one task)")
	traced := flag.Bool("trace", os.Getenv("CODEMODE_TRACE") == "1", "print the run's trace (ADK's spans and Code Mode's) after the transcript; also CODEMODE_TRACE=1")
	flag.Parse()
	var rec *tracetest.SpanRecorder
	if *traced {
		rec = tracetest.NewSpanRecorder()
		otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	}
	err := run(context.Background(), os.Stdout, *modelName, *backendName, *prompt)
	if rec != nil {
		printTrace(os.Stdout, rec)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "codemode-demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, modelName, backendName, prompt string) error {
	var backend transport.Backend
	switch backendName {
	case "jail":
		backend = &jail.Backend{}
	case "unsandboxed":
		backend = &unsandboxed.Backend{}
		fmt.Fprintln(out, "warning: the unsandboxed backend runs the model's code with your privileges; use it for development only")
	default:
		return fmt.Errorf("unknown backend %q (want jail or unsandboxed)", backendName)
	}

	var llm model.LLM
	if key := os.Getenv("GOOGLE_API_KEY"); key != "" {
		m, err := gemini.NewModel(ctx, modelName, &genai.ClientConfig{APIKey: key, Backend: genai.BackendGeminiAPI})
		if err != nil {
			return err
		}
		llm = m
		fmt.Fprintf(out, "model: %s (Gemini)\n", modelName)
	} else {
		llm = &scriptedModel{}
		prompt = task
		fmt.Fprintln(out, "GOOGLE_API_KEY is not set: replaying a scripted model. The sandbox and the tools are real.")
	}
	return converse(ctx, out, llm, backend, prompt)
}

// converse runs one turn of the demo agent, with llm as its model, and
// prints it as it happens.
func converse(ctx context.Context, out io.Writer, llm model.LLM, backend transport.Backend, prompt string) error {
	tools, err := demoTools()
	if err != nil {
		return err
	}
	p, err := codemode.New(codemode.Config{Tools: tools, Backend: backend})
	if err != nil {
		return err
	}
	defer func() { _ = p.Close() }()

	t := &transcript{out: out}
	a, err := llmagent.New(llmagent.Config{
		Name:        "weather_assistant",
		Model:       llm,
		Instruction: "You answer questions about the weather. Use execute_code to call the tools, and keep intermediate results in variables.",
		// Code Mode honours the agent's tool callbacks for calls made from
		// code; this one prints each call.
		AfterToolCallbacks: []llmagent.AfterToolCallback{t.afterTool},
	})
	if err != nil {
		return err
	}
	r, err := runner.New(runner.Config{
		AppName:           "codemode-demo",
		Agent:             a,
		SessionService:    session.InMemoryService(),
		AutoCreateSession: true,
		PluginConfig:      runner.PluginConfig{Plugins: []*plugin.Plugin{p}},
	})
	if err != nil {
		return err
	}

	fmt.Fprintf(out, "\nuser: %s\n", prompt)
	start := time.Now()
	for ev, err := range r.Run(ctx, "demo-user", "demo-session", genai.NewContentFromText(prompt, genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			return err
		}
		t.event(ev)
	}
	fmt.Fprintf(out, "\n(finished in %s)\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// transcript prints the run as it happens.
type transcript struct{ out io.Writer }

func (t *transcript) event(ev *session.Event) {
	if ev.Content == nil {
		return
	}
	for _, p := range ev.Content.Parts {
		switch {
		case p.Text != "" && !p.Thought:
			fmt.Fprintf(t.out, "\nmodel: %s\n", strings.TrimSpace(p.Text))
		case p.FunctionCall != nil && p.FunctionCall.Name == codemode.ToolName:
			code, _ := p.FunctionCall.Args["code"].(string)
			fmt.Fprintf(t.out, "\nmodel runs code:\n%s\n", indent(code, "  │ "))
		case p.FunctionCall != nil:
			fmt.Fprintf(t.out, "\nmodel calls %s(%s)\n", p.FunctionCall.Name, compact(p.FunctionCall.Args))
		case p.FunctionResponse != nil && p.FunctionResponse.Name == codemode.ToolName:
			r := p.FunctionResponse.Response
			if s, _ := r["stdout"].(string); s != "" {
				fmt.Fprintf(t.out, "stdout:\n%s\n", indent(strings.TrimRight(s, "\n"), "  │ "))
			}
			if s, _ := r["stderr"].(string); s != "" {
				fmt.Fprintf(t.out, "stderr:\n%s\n", indent(strings.TrimRight(s, "\n"), "  │ "))
			}
			if e, ok := r["error"]; ok {
				fmt.Fprintf(t.out, "error: %v\n", e)
			}
		}
	}
}

// afterTool prints each tool call made from code, with its result.
func (t *transcript) afterTool(ctx agent.Context, tl tool.Tool, args, result map[string]any, err error) (map[string]any, error) {
	if tl.Name() == codemode.ToolName {
		return nil, nil
	}
	if err != nil {
		fmt.Fprintf(t.out, "  ↳ tool %s(%s) failed: %v\n", tl.Name(), compact(args), err)
		return nil, nil
	}
	fmt.Fprintf(t.out, "  ↳ tool %s(%s) → %s\n", tl.Name(), compact(args), compact(result))
	return nil, nil
}

func compact(v map[string]any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
