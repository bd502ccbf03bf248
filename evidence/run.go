package evidence

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"regexp"
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
	// api.github.com.json of the npm package @octokit/openapi@23.0.2
	// installed under $CODEMODE_OCTOKIT_DIR, else under the user's cache
	// directory (codemode-test/octokit-openapi@23.0.2), where the
	// repository's tests install it. When it is missing the shape is
	// skipped, with how to install it.
	GitHubSpec string
	// Runs is how many times each shape runs under each condition; the
	// times reported are the medians. With the scripted model the sizes
	// and counts must be the same on every run; with a live Model they are
	// medians too. Zero means 1.
	Runs int
	// Model, if set, is a live model that replaces the scripted policies:
	// its answers are scored against the checked ones (a wrong answer is
	// counted, not an error) and measured the same way.
	Model model.LLM
	// MaxRoundTrips ends a run that has called the model this many times
	// without an answer; with a live Model the run counts as failed. Zero
	// means 40.
	MaxRoundTrips int
	// Log, if set, gets a line per shape and condition as it ends.
	Log io.Writer
	// Extra are shapes of your own (see NewShape), run after the built-in
	// ones that Shapes selects; with Extra set and Shapes empty, only the
	// Extra shapes run.
	Extra []Shape
	// Tokenizer, if set, counts the tokens of every request and of the
	// tool results in it, beside their bytes (see StartGemma3). Counting
	// is the harness's time, not the run's.
	Tokenizer Tokenizer
}

// Run runs the shapes under the conditions opts selects and checks every
// answer. With the scripted model a wrong answer is an error, since the
// harness measures solved tasks only; with a live Model it is counted. A
// shape that cannot run on this host is listed in Report.Skipped.
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
		if (len(opts.Shapes) == 0 && len(opts.Extra) == 0) || slices.Contains(opts.Shapes, sh.Name) {
			shapes = append(shapes, sh)
		}
	}
	for _, sh := range opts.Extra {
		if sh.setup == nil {
			return nil, fmt.Errorf("evidence: Options.Extra has a shape %q not made by NewShape", sh.Name)
		}
		shapes = append(shapes, sh)
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
		warm := opts
		warm.Model = nil
		if _, err := runOne(ctx, Shapes()[0], Code, warm, rec); err != nil {
			return nil, fmt.Errorf("evidence: warming up the sandbox backend: %w", err)
		}
	}
	rep := &Report{Model: "scripted"}
	if opts.Model != nil {
		rep.Model = opts.Model.Name()
	}
	if opts.Tokenizer != nil {
		rep.Tokenizer = opts.Tokenizer.Name()
	}
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
				tokens := ""
				if opts.Tokenizer != nil {
					tokens = fmt.Sprintf(" %8d request tokens", res.RequestTokens)
				}
				fmt.Fprintf(opts.Log, "%-9s %-7s %2d round trips %9d request bytes%s %4d tool calls %8.1f ms\n",
					res.Shape, res.Condition, res.RoundTrips, res.RequestBytes, tokens, res.ToolCalls, res.WallMS)
			}
		}
	}
	return rep, nil
}

// runMany runs a shape under a condition opts.Runs times. With the
// scripted model every run must measure the same sizes and counts, and
// the times are the medians; with a live one every measure is the
// median, over the runs that ended, and the answers are counted.
func runMany(ctx context.Context, sh Shape, c Condition, opts Options, rec *recorder) (Result, error) {
	n := max(opts.Runs, 1)
	var all []Result
	var failed []string
	for i := range n {
		res, err := runOne(ctx, sh, c, opts, rec)
		if _, skip := errSkip(err); skip || (err != nil && opts.Model == nil) {
			return res, err
		}
		if err != nil {
			failed = append(failed, fmt.Sprintf("run %d: %v", i+1, err))
			continue
		}
		if opts.Model == nil && i > 0 && !sameMeasures(all[0], res) {
			return res, fmt.Errorf("run %d measured %d round trips, %d request bytes, %d bytes of results and %d tool calls; run 1 %d, %d, %d and %d: the harness is not deterministic",
				i+1, res.RoundTrips, res.RequestBytes, res.ToolResultBytes, res.ToolCalls, all[0].RoundTrips, all[0].RequestBytes, all[0].ToolResultBytes, all[0].ToolCalls)
		}
		all = append(all, res)
	}
	if len(all) == 0 {
		return Result{Shape: sh.Name, Title: sh.Title, Condition: c, Runs: n, Failed: failed}, nil
	}
	out := all[0]
	out.Runs, out.Failed, out.CorrectRuns = n, failed, 0
	for _, r := range all {
		if r.Correct {
			out.CorrectRuns++
		}
	}
	out.Correct = out.CorrectRuns == n
	mid := func(f func(Result) float64) float64 {
		v := make([]float64, len(all))
		for i, r := range all {
			v[i] = f(r)
		}
		return median(v)
	}
	out.WallMS = mid(func(r Result) float64 { return r.WallMS })
	out.SandboxStartMS = mid(func(r Result) float64 { return r.SandboxStartMS })
	out.BlocksMS = mid(func(r Result) float64 { return r.BlocksMS })
	out.ToolsMS = mid(func(r Result) float64 { return r.ToolsMS })
	if opts.Model != nil {
		count := func(f func(Result) int) int {
			return int(mid(func(r Result) float64 { return float64(f(r)) }) + 0.5)
		}
		out.RoundTrips = count(func(r Result) int { return r.RoundTrips })
		out.RequestBytes = count(func(r Result) int { return r.RequestBytes })
		out.LargestRequestBytes = count(func(r Result) int { return r.LargestRequestBytes })
		out.ToolResultBytes = count(func(r Result) int { return r.ToolResultBytes })
		out.ToolCalls = count(func(r Result) int { return r.ToolCalls })
		out.RequestTokens = count(func(r Result) int { return r.RequestTokens })
		out.LargestRequestTokens = count(func(r Result) int { return r.LargestRequestTokens })
		out.ToolResultTokens = count(func(r Result) int { return r.ToolResultTokens })
		out.RequestBytesEach, out.RequestTokensEach = nil, nil
	}
	return out, nil
}

// median is the middle of v, or the mean of its two middle values.
func median(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

func sameMeasures(a, b Result) bool {
	return a.RoundTrips == b.RoundTrips && a.RequestBytes == b.RequestBytes && a.ToolResultBytes == b.ToolResultBytes &&
		a.RequestTokens == b.RequestTokens && a.ToolResultTokens == b.ToolResultTokens &&
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
	var inner model.LLM = &scripted{policy: pol}
	if opts.Model != nil {
		inner = opts.Model
	}
	llm := &measured{inner: inner, limit: opts.MaxRoundTrips, tok: opts.Tokenizer}
	if llm.limit <= 0 {
		llm.limit = 40
	}
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
		Answer: final, Want: fx.answer, Correct: scored(final, fx.answer, opts.Model != nil),
		RoundTrips:        len(llm.requestBytes),
		RequestBytesEach:  llm.requestBytes,
		ToolResultBytes:   llm.resultBytes,
		ToolResultTokens:  llm.resultTokens,
		RequestTokensEach: llm.requestTokens,
		ToolCalls:         int(fx.calls.Load()),
		WallMS:            ms(wall - llm.elapsed),
	}
	for _, n := range llm.requestBytes {
		res.RequestBytes += n
		res.LargestRequestBytes = max(res.LargestRequestBytes, n)
	}
	for _, n := range llm.requestTokens {
		res.RequestTokens += n
		res.LargestRequestTokens = max(res.LargestRequestTokens, n)
	}
	rec.split(&res)
	if !res.Correct && opts.Model == nil {
		return res, fmt.Errorf("the answer is %q, want %q", final, fx.answer)
	}
	return res, nil
}

// scored reports whether the final text gives the answer: the scripted
// model's must be the answer exactly; a live model's must contain it as
// a word of its own, ignoring case and thousands separators.
func scored(final, want string, live bool) bool {
	final = strings.TrimSpace(final)
	if !live {
		return final == want
	}
	norm := func(s string) string {
		// Matches do not overlap: "1,234,567" takes two passes.
		for t := ""; t != s; {
			t, s = s, digitGroups.ReplaceAllString(s, "$1$2")
		}
		return strings.ToLower(s)
	}
	re, err := regexp.Compile(`(^|[^\pL\pN-])` + regexp.QuoteMeta(norm(want)) + `($|[^\pL\pN-])`)
	return err == nil && re.MatchString(norm(final))
}

// digitGroups matches a comma or a thin or plain space between digits.
var digitGroups = regexp.MustCompile(`(\d)[,\x{202F} ](\d{3})`)

// measured is a model.LLM that measures what another is sent, and the
// time it takes.
type measured struct {
	inner model.LLM
	limit int
	tok   Tokenizer // nil: bytes only
	// requestBytes is the size of each request: system instruction,
	// tools and contents, as JSON of the genai types.
	requestBytes []int
	// resultBytes is the size of the function responses in the last
	// request's contents: what tool results put into the context.
	resultBytes int
	// requestTokens and resultTokens are the same in tokens, with a
	// tokenizer.
	requestTokens []int
	resultTokens  int
	elapsed       time.Duration
	err           error
}

func (m *measured) Name() string { return m.inner.Name() }

func (m *measured) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		// The model's time is the time spent measuring the request and in
		// the model's iterator, less the time the caller takes with each
		// response.
		start := time.Now()
		if err := m.measure(req); err != nil {
			m.err = err
			yield(nil, err)
			return
		}
		for resp, err := range m.inner.GenerateContent(ctx, req, stream) {
			m.elapsed += time.Since(start)
			more := yield(resp, err)
			start = time.Now()
			if !more {
				return
			}
		}
		m.elapsed += time.Since(start)
	}
}

func (m *measured) measure(req *model.LLMRequest) error {
	if len(m.requestBytes) >= m.limit {
		return fmt.Errorf("the model was called %d times without giving an answer", m.limit)
	}
	n, err := requestSize(req)
	if err != nil {
		return err
	}
	m.requestBytes = append(m.requestBytes, n)
	m.resultBytes, m.resultTokens = 0, 0
	if m.tok != nil {
		n, err := requestTokens(req, m.tok)
		if err != nil {
			return err
		}
		m.requestTokens = append(m.requestTokens, n)
	}
	for _, c := range req.Contents {
		if c == nil {
			continue
		}
		for _, p := range c.Parts {
			if p.FunctionResponse == nil {
				continue
			}
			b, err := json.Marshal(p.FunctionResponse.Response)
			if err != nil {
				return err
			}
			m.resultBytes += len(b)
			if m.tok != nil {
				n, err := m.tok.CountTokens(string(b))
				if err != nil {
					return err
				}
				m.resultTokens += n
			}
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// scripted is a model.LLM that follows a policy.
type scripted struct {
	policy Policy
}

func (*scripted) Name() string { return "scripted" }

func (m *scripted) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		turn, err := m.policy(observe(req))
		if err != nil {
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

// observe is what the scripted model reads of a request: the replies it
// has made since the user's message, and the last turn's responses.
func observe(req *model.LLMRequest) Observation {
	var obs Observation
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
			if p.FunctionResponse != nil {
				obs.Responses = append(obs.Responses, p.FunctionResponse)
			}
		}
	}
	return obs
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
