package evidence

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"

	"github.com/adk-codemode/codemode/plugin/codemode"
	"github.com/adk-codemode/codemode/transport"
)

// A Condition is how the agent reaches the tools.
type Condition string

const (
	// Direct: a plain ADK agent with the tools as its own; no Code Mode.
	Direct Condition = "direct"
	// Code: the tools only behind execute_code.
	Code Condition = "code"
	// Hybrid: the tools behind execute_code and callable directly too.
	Hybrid Condition = "hybrid"
)

// Conditions are the three conditions, in the report's order.
var Conditions = []Condition{Direct, Code, Hybrid}

// Options select what Run runs.
type Options struct {
	// Shapes names the shapes to run; empty runs all.
	Shapes []string
	// Conditions to run; empty runs all three.
	Conditions []Condition
	// Backend runs the code; it is shared by every run, so that sandbox
	// starts are the warm path a long-lived agent sees. It is the
	// caller's to close.
	Backend transport.Backend
	// GitHubSpec is the path of GitHub's REST description; empty means
	// GitHubSpecPath(). When it is missing the shape is skipped.
	GitHubSpec string
	// Runs is how many times each shape runs under each condition; the
	// times reported are the medians. The sizes and counts must be the
	// same on every run. Zero means 1.
	Runs int
	// Log, if set, gets a line per shape and condition as it ends.
	Log io.Writer
}

// Run runs the shapes under the conditions opts selects and checks every
// answer. A wrong answer is an error: the harness measures solved tasks
// only. A shape that cannot run on this host is listed in Report.Skipped.
func Run(ctx context.Context, opts Options) (*Report, error) {
	conds := opts.Conditions
	if len(conds) == 0 {
		conds = Conditions
	}
	if opts.Backend == nil && (slices.Contains(conds, Code) || slices.Contains(conds, Hybrid)) {
		return nil, fmt.Errorf("evidence: Options.Backend is nil: give the sandbox backend to run code in, such as &jail.Backend{}")
	}
	var shapes []Shape
	for _, sh := range Shapes() {
		if len(opts.Shapes) == 0 || slices.Contains(opts.Shapes, sh.Name) {
			shapes = append(shapes, sh)
		}
	}
	for _, name := range opts.Shapes {
		if !slices.ContainsFunc(shapes, func(s Shape) bool { return s.Name == name }) {
			return nil, fmt.Errorf("evidence: no shape %q (the shapes: %s)", name, strings.Join(shapeNames(), ", "))
		}
	}
	rec := spans()
	// A first block starts the backend's template, which a long-lived
	// agent pays once; it is not the cost of any shape.
	if slices.Contains(conds, Code) || slices.Contains(conds, Hybrid) {
		if _, err := runOne(ctx, Shapes()[0], Code, opts, rec); err != nil {
			return nil, fmt.Errorf("evidence: warming up the sandbox backend: %w", err)
		}
	}
	rep := &Report{}
	for _, sh := range shapes {
		for _, c := range conds {
			res, err := runMany(ctx, sh, c, opts, rec)
			if s, ok := errSkip(err); ok {
				rep.Skipped = append(rep.Skipped, Skip{Shape: sh.Name, Reason: s.Reason})
				break
			}
			if err != nil {
				return rep, fmt.Errorf("evidence: shape %s, condition %s: %w", sh.Name, c, err)
			}
			rep.Results = append(rep.Results, res)
			if opts.Log != nil {
				fmt.Fprintf(opts.Log, "%-9s %-7s %2d round trips %9d request bytes %4d tool calls %8.1f ms\n",
					res.Shape, res.Condition, res.RoundTrips, res.RequestBytes, res.ToolCalls, res.WallMS)
			}
		}
	}
	return rep, nil
}

// runMany runs a shape under a condition opts.Runs times: the sizes and
// counts of the first run, which every run must repeat, and the median
// times.
func runMany(ctx context.Context, sh Shape, c Condition, opts Options, rec *recorder) (Result, error) {
	n := max(opts.Runs, 1)
	var all []Result
	for i := range n {
		res, err := runOne(ctx, sh, c, opts, rec)
		if err != nil {
			return res, err
		}
		if i > 0 && !sameMeasures(all[0], res) {
			return res, fmt.Errorf("run %d measured %d round trips, %d request bytes, %d bytes of results and %d tool calls; run 1 %d, %d, %d and %d: the harness is not deterministic",
				i+1, res.RoundTrips, res.RequestBytes, res.ToolResultBytes, res.ToolCalls, all[0].RoundTrips, all[0].RequestBytes, all[0].ToolResultBytes, all[0].ToolCalls)
		}
		all = append(all, res)
	}
	out := all[0]
	out.Runs = n
	median := func(f func(Result) float64) float64 {
		v := make([]float64, n)
		for i, r := range all {
			v[i] = f(r)
		}
		slices.Sort(v)
		if n%2 == 1 {
			return v[n/2]
		}
		return (v[n/2-1] + v[n/2]) / 2
	}
	out.WallMS = median(func(r Result) float64 { return r.WallMS })
	out.SandboxStartMS = median(func(r Result) float64 { return r.SandboxStartMS })
	out.BlocksMS = median(func(r Result) float64 { return r.BlocksMS })
	out.ToolsMS = median(func(r Result) float64 { return r.ToolsMS })
	return out, nil
}

func sameMeasures(a, b Result) bool {
	return a.RoundTrips == b.RoundTrips && a.RequestBytes == b.RequestBytes && a.ToolResultBytes == b.ToolResultBytes &&
		a.ToolCalls == b.ToolCalls && a.Answer == b.Answer
}

func shapeNames() []string {
	var out []string
	for _, s := range Shapes() {
		out = append(out, s.Name)
	}
	return out
}

// runOne runs one shape under one condition through a real ADK runner.
func runOne(ctx context.Context, sh Shape, c Condition, opts Options, rec *recorder) (Result, error) {
	fx, err := sh.setup(ctx, opts)
	if err != nil {
		return Result{}, err
	}
	if fx.close != nil {
		defer fx.close()
	}
	pol := fx.code()
	if c == Direct || (c == Hybrid && sh.Hybrid == Direct) {
		pol = fx.direct0()
	}
	llm := &scripted{policy: pol}
	acfg := llmagent.Config{
		Name:        "evidence_agent",
		Model:       llm,
		Instruction: "You answer the user's questions with the tools.",
	}
	var plugins []*plugin.Plugin
	switch c {
	case Direct:
		acfg.Tools, acfg.Toolsets = fx.tools, fx.toolsets
	case Code, Hybrid:
		ccfg := codemode.Config{
			Tools:    fx.tools,
			Toolsets: fx.toolsets,
			Backend:  opts.Backend,
			// Artifacts are a feature of their own; these runs measure
			// the calling of tools.
			DisableArtifactTools:       true,
			DisableToolResultArtifacts: true,
		}
		if c == Hybrid {
			hybridTools(&ccfg, fx)
		}
		p, err := codemode.New(ccfg)
		if err != nil {
			return Result{}, err
		}
		defer func() { _ = p.Close() }()
		plugins = append(plugins, p)
	}
	a, err := llmagent.New(acfg)
	if err != nil {
		return Result{}, err
	}
	r, err := runner.New(runner.Config{
		AppName:           "evidence",
		Agent:             a,
		SessionService:    session.InMemoryService(),
		AutoCreateSession: true,
		PluginConfig:      runner.PluginConfig{Plugins: plugins},
	})
	if err != nil {
		return Result{}, err
	}
	rec.take()
	start := time.Now()
	final := ""
	for ev, err := range r.Run(ctx, "user", "session", genai.NewContentFromText(fx.prompt, genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			return Result{}, err
		}
		if ev.Content != nil && ev.Content.Role == genai.RoleModel {
			for _, p := range ev.Content.Parts {
				if p.Text != "" && !p.Thought {
					final = p.Text
				}
			}
		}
	}
	wall := time.Since(start)
	if llm.err != nil {
		return Result{}, llm.err
	}
	res := Result{
		Shape: sh.Name, Title: sh.Title, Condition: c,
		Answer: final, Want: fx.answer, Correct: strings.TrimSpace(final) == fx.answer,
		RoundTrips:       len(llm.requestBytes),
		RequestBytesEach: llm.requestBytes,
		ToolResultBytes:  llm.resultBytes,
		ToolCalls:        int(fx.calls.Load()),
		WallMS:           ms(wall - llm.elapsed),
	}
	for _, n := range llm.requestBytes {
		res.RequestBytes += n
		res.LargestRequestBytes = max(res.LargestRequestBytes, n)
	}
	rec.split(&res)
	if !res.Correct {
		return res, fmt.Errorf("the answer is %q, want %q", final, fx.answer)
	}
	return res, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// scripted is a model.LLM that follows a policy and measures what it is
// sent.
type scripted struct {
	policy Policy
	// requestBytes is the size of each request: system instruction,
	// tools and contents, as JSON of the genai types.
	requestBytes []int
	// resultBytes is the size of the function responses in the last
	// request's contents: what tool results put into the context.
	resultBytes int
	elapsed     time.Duration
	err         error
}

func (*scripted) Name() string { return "scripted" }

func (m *scripted) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		start := time.Now()
		turn, err := m.reply(req)
		m.elapsed += time.Since(start)
		if err != nil {
			m.err = err
			yield(nil, err)
			return
		}
		var parts []*genai.Part
		for _, c := range turn.Calls {
			parts = append(parts, &genai.Part{FunctionCall: c})
		}
		if len(parts) == 0 {
			parts = []*genai.Part{{Text: turn.Answer}}
		}
		yield(&model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: parts}, TurnComplete: true}, nil)
	}
}

func (m *scripted) reply(req *model.LLMRequest) (Turn, error) {
	n, err := requestSize(req)
	if err != nil {
		return Turn{}, err
	}
	m.requestBytes = append(m.requestBytes, n)
	obs := Observation{}
	m.resultBytes = 0
	for _, c := range req.Contents {
		if c == nil {
			continue
		}
		switch {
		case c.Role == genai.RoleModel:
			obs.Step++
			obs.Responses = nil
		case c.Role == genai.RoleUser && len(c.Parts) > 0 && c.Parts[0].Text != "":
			obs.Step = 0
		}
		for _, p := range c.Parts {
			if p.FunctionResponse == nil {
				continue
			}
			obs.Responses = append(obs.Responses, p.FunctionResponse)
			b, err := json.Marshal(p.FunctionResponse.Response)
			if err != nil {
				return Turn{}, err
			}
			m.resultBytes += len(b)
		}
	}
	return m.policy(obs)
}

// requestSize is the size of what a request sends the model: the system
// instruction, the tool declarations and the contents, as JSON.
func requestSize(req *model.LLMRequest) (int, error) {
	n := 0
	add := func(v any) error {
		b, err := json.Marshal(v)
		n += len(b)
		return err
	}
	if req.Config != nil {
		if err := add(req.Config.SystemInstruction); err != nil {
			return 0, err
		}
		if err := add(req.Config.Tools); err != nil {
			return 0, err
		}
	}
	return n, add(req.Contents)
}

// recorder keeps the spans that end; one per process, installed as the
// global tracer provider, since ADK takes its tracer from there.
type recorder struct {
	mu    sync.Mutex
	ended []sdktrace.ReadOnlySpan
}

var (
	recOnce sync.Once
	rec     *recorder
)

func spans() *recorder {
	recOnce.Do(func() {
		rec = &recorder{}
		otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	})
	return rec
}

func (r *recorder) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (r *recorder) OnEnd(s sdktrace.ReadOnlySpan) {
	r.mu.Lock()
	r.ended = append(r.ended, s)
	r.mu.Unlock()
}
func (r *recorder) Shutdown(context.Context) error   { return nil }
func (r *recorder) ForceFlush(context.Context) error { return nil }

// take returns the spans ended since the last take.
func (r *recorder) take() []sdktrace.ReadOnlySpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.ended
	r.ended = nil
	return s
}

// split fills the sandbox, block and tool times of res from the spans of
// its run.
func (r *recorder) split(res *Result) {
	var start, blocks, tools time.Duration
	for _, s := range r.take() {
		d := s.EndTime().Sub(s.StartTime())
		switch name := s.Name(); {
		case name == "codemode.sandbox.start":
			start += d
		case name == "codemode.block":
			blocks += d
		case strings.HasPrefix(name, "execute_tool ") && name != "execute_tool "+codemode.ToolName:
			tools += d
		}
	}
	res.SandboxStartMS = ms(start)
	res.BlocksMS = ms(blocks - start)
	res.ToolsMS = ms(tools)
}
