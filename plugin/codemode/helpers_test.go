package codemode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/transport"
)

// step is one reply of the scripted model, given the request it answers.
type step func(req *model.LLMRequest) *genai.Content

// scriptedModel replays a script per user message: the reply to a request
// is the step at the position of the request in its turn (the number of
// model replies since the user's message).
type scriptedModel struct {
	mu      sync.Mutex
	scripts map[string][]step
	reqs    []*model.LLMRequest
}

var _ model.LLM = (*scriptedModel)(nil)

func newScript() *scriptedModel { return &scriptedModel{scripts: map[string][]step{}} }

// on sets the script replayed for the user message msg.
func (m *scriptedModel) on(msg string, steps ...step) *scriptedModel {
	m.scripts[msg] = steps
	return m
}

func (m *scriptedModel) Name() string { return "scripted" }

func (m *scriptedModel) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		msg, pos := position(req)
		m.mu.Lock()
		m.reqs = append(m.reqs, req)
		steps := m.scripts[msg]
		m.mu.Unlock()
		if pos >= len(steps) {
			yield(nil, fmt.Errorf("scripted model: no step %d for %q", pos, msg))
			return
		}
		yield(&model.LLMResponse{Content: steps[pos](req), TurnComplete: true}, nil)
	}
}

func (m *scriptedModel) requests() []*model.LLMRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*model.LLMRequest(nil), m.reqs...)
}

// position finds the last user text in the request and counts the model
// replies after it.
func position(req *model.LLMRequest) (string, int) {
	msg, pos := "", 0
	for _, c := range req.Contents {
		if c == nil {
			continue
		}
		if c.Role == genai.RoleUser {
			for _, p := range c.Parts {
				if p.Text != "" {
					msg, pos = p.Text, 0
				}
			}
			continue
		}
		pos++
	}
	return msg, pos
}

// run replies with one execute_code call per piece of code, issued
// together.
func run(code ...string) step {
	return func(*model.LLMRequest) *genai.Content {
		c := &genai.Content{Role: genai.RoleModel}
		for _, src := range code {
			c.Parts = append(c.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{
				Name: ToolName, Args: map[string]any{"code": src},
			}})
		}
		return c
	}
}

// say replies with text, ending the turn.
func say(text string) step {
	return func(*model.LLMRequest) *genai.Content { return genai.NewContentFromText(text, genai.RoleModel) }
}

// fixture is a runner with the plugin, a scripted model and an agent.
type fixture struct {
	t        testing.TB
	hooks    *hookSet
	model    *scriptedModel
	sessions session.Service
	runner   *runner.Runner
}

type fixtureConfig struct {
	cfg       Config
	agent     llmagent.Config // Name, Model and Instruction are filled in
	plugins   []*plugin.Plugin
	noPlugin  bool             // attach only the before-model hook to the agent, without the plugin
	artifacts artifact.Service // the runner's artifact service; nil for none
	sessions  session.Service  // the runner's session service; nil for a new in-memory one
	model     model.LLM        // the agent's model, in place of the scripted one
}

func newFixture(t testing.TB, m *scriptedModel, fc fixtureConfig) *fixture {
	t.Helper()
	if fc.cfg.Backend == nil {
		fc.cfg.Backend = testBackend(t)
	}
	h, err := newHooks(fc.cfg, !fc.noPlugin)
	if err != nil {
		t.Fatalf("newHooks: %v", err)
	}
	t.Cleanup(func() { _ = h.Close() })
	ac := fc.agent
	ac.Name = "assistant"
	ac.Model = m
	if fc.model != nil {
		ac.Model = fc.model
	}
	ac.Instruction = "You are a helpful assistant."
	plugins := fc.plugins
	if fc.noPlugin {
		ac.BeforeModelCallbacks = append(ac.BeforeModelCallbacks, h.BeforeModel)
		ac.OnToolErrorCallbacks = append(ac.OnToolErrorCallbacks, h.OnToolError)
	} else {
		p, err := h.plugin()
		if err != nil {
			t.Fatal(err)
		}
		plugins = append([]*plugin.Plugin{p}, plugins...)
	}
	a, err := llmagent.New(ac)
	if err != nil {
		t.Fatal(err)
	}
	svc := fc.sessions
	if svc == nil {
		svc = session.InMemoryService()
	}
	r, err := runner.New(runner.Config{
		AppName:           "test",
		Agent:             a,
		SessionService:    svc,
		PluginConfig:      runner.PluginConfig{Plugins: plugins},
		ArtifactService:   fc.artifacts,
		AutoCreateSession: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, hooks: h, model: m, sessions: svc, runner: r}
}

// turn runs one user message in session sid and returns its events.
func (f *fixture) turn(ctx context.Context, sid, msg string) []*session.Event {
	f.t.Helper()
	var evs []*session.Event
	for ev, err := range f.runner.Run(ctx, "user", sid, genai.NewContentFromText(msg, genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			f.t.Fatalf("run %q: %v", msg, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// outputs returns the execute_code results among events, in order.
func outputs(evs []*session.Event) []map[string]any {
	var out []map[string]any
	for _, ev := range evs {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionResponse != nil && p.FunctionResponse.Name == ToolName {
				out = append(out, p.FunctionResponse.Response)
			}
		}
	}
	return out
}

// testBackend returns the jail; where namespaces are unavailable it skips
// the test, or fails it under CODEMODE_REQUIRE_ALL=1 (see hostcap).
func testBackend(t testing.TB) transport.Backend {
	t.Helper()
	b := &jail.Backend{}
	jailOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := b.Open(ctx, transport.SessionConfig{})
		if err == nil {
			_ = s.Close()
		}
		jailErr = err
	})
	if errors.Is(jailErr, jail.ErrUnsupported) {
		hostcap.Missing(t, hostcap.UserNS, jailErr)
	}
	if jailErr != nil {
		t.Fatalf("the jail does not start: %v", jailErr)
	}
	return b
}

var (
	jailOnce sync.Once
	jailErr  error
)

// Deterministic tools.

type cityArgs struct {
	City string `json:"city"`
}

type convertArgs struct {
	Value float64 `json:"value"`
	Unit  string  `json:"unit" jsonschema:"the unit to convert to: F or C"`
}

type rememberArgs struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func weatherTools(t *testing.T) []tool.Tool {
	t.Helper()
	weather, err := functiontool.New(functiontool.Config{Name: "get_weather", Description: "Current weather of a city."},
		func(_ agent.Context, a cityArgs) (map[string]any, error) {
			temps := map[string]float64{"Paris": 18, "Oslo": 4}
			temp, ok := temps[a.City]
			if !ok {
				return nil, fmt.Errorf("unknown city %q", a.City)
			}
			return map[string]any{"city": a.City, "temp_c": temp}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	convert, err := functiontool.New(functiontool.Config{Name: "convert_temperature", Description: "Convert a Celsius temperature."},
		func(_ agent.Context, a convertArgs) (map[string]any, error) {
			if a.Unit != "F" {
				return nil, fmt.Errorf("unsupported unit %q", a.Unit)
			}
			return map[string]any{"value": a.Value*9/5 + 32, "unit": "F"}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	remember, err := functiontool.New(functiontool.Config{Name: "remember", Description: "Store a value in the session state."},
		func(ctx agent.Context, a rememberArgs) (map[string]any, error) {
			if err := ctx.State().Set(a.Key, a.Value); err != nil {
				return nil, err
			}
			return map[string]any{"stored": a.Key}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return []tool.Tool{weather, convert, remember}
}

// proc is what the tests read of a process from /proc.
type proc struct {
	ppid        int
	argv0, comm string
}

// procs reads every live process of the host's pid namespace. A zombie
// is left out: it holds nothing but its pid until its parent reaps it (a
// forked session's pid 1 is reaped by its template's jail, after the
// session's Close has returned).
func procs() map[int]proc {
	out := map[int]proc{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		out[pid] = proc{
			ppid:  ppid,
			argv0: filepath.Base(string(bytes.SplitN(cmd, []byte{0}, 2)[0])),
			comm:  strings.TrimSpace(string(comm)),
		}
	}
	return out
}

// descends reports whether pid is a descendant of this process.
func descends(all map[int]proc, pid int) bool {
	self := os.Getpid()
	for p, n := all[pid].ppid, 0; p > 1 && n < 64; p, n = all[p].ppid, n+1 {
		if p == self {
			return true
		}
	}
	return false
}

// templateOwned reports whether pid belongs to a jail's template rather
// than to a session: the template (named codemode-zygote), a blank
// session it forked ahead (codemode-spare), or the init of the template's
// own jail. The default jail.Backend keeps these while sessions come and
// go.
func templateOwned(all map[int]proc, pid int) bool {
	switch all[pid].comm {
	case "codemode-zygote", "codemode-spare":
		return true
	}
	if all[pid].argv0 != "codemode-jail-init" {
		return false
	}
	for child, p := range all {
		if p.ppid == pid && templateOwned(all, child) {
			return true
		}
	}
	return false
}

// sessionInits lists the host pids of the sessions this process has open:
// a cold jail's init, a supervisor (a sandbox server's, or the pid 1 of a
// session forked from a template once it is set up: the host program
// under the supervisor's argv[0]), or the pid 1 of a forked session still
// being set up (named codemode-forked, as the first worker it forks is).
// Templates are not sessions.
func sessionInits() []int {
	all := procs()
	var out []int
	for pid, p := range all {
		if p.argv0 != "codemode-jail-init" && p.argv0 != "codemode-supervisor" && p.comm != "codemode-forked" {
			continue
		}
		if parent := all[p.ppid]; p.comm == "codemode-forked" &&
			(parent.comm == "codemode-forked" || parent.argv0 == "codemode-supervisor") {
			continue // a worker: its session's pid 1 is listed
		}
		if descends(all, pid) && !templateOwned(all, pid) {
			out = append(out, pid)
		}
	}
	return out
}

// sandboxProcesses describes the sessions this process has open (see
// sessionInits).
func sandboxProcesses() []string {
	all := procs()
	var out []string
	for _, pid := range sessionInits() {
		name := all[pid].argv0
		if all[pid].comm == "codemode-forked" || all[all[pid].ppid].argv0 == "codemode-jail-init" {
			name = "forked session" // its parent is its template's jail init
		}
		out = append(out, fmt.Sprintf("%d (%s)", pid, name))
	}
	return out
}

// eventually polls cond until it holds or a generous deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (h *hookSet) turnCount() int { return len(h.e.turns.All()) }
