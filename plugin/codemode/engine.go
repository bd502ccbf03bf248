package codemode

import (
	"strings"
	"sync"

	"github.com/adk-codemode/codemode/internal/both/observe"
	eng "github.com/adk-codemode/codemode/internal/host/engine"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"

	"github.com/adk-codemode/codemode/transport"
)

// ErrClosed is returned by execute_code once the plugin is closed.
var ErrClosed = eng.ErrClosed

// engine holds the state shared by the hooks and the execute_code tool: the
// turns by invocation id and the idle reaper.
type engine struct {
	cfg      Config
	bare     []namespacedTool
	toolsets []namedToolset
	// static is the surface when there are no toolsets: [1] with the
	// artifact tools and parameters, for invocations with an artifact
	// service, [0] without.
	static         [2]*surface
	requirePlugins bool // registered as a runner plugin
	// tool is execute_code: [1] described with artifacts, [0] without.
	tool         [2]*execTool
	toolsetHooks []requestProcessorOf       // the toolsets' request processors, in order
	ownBackend   interface{ Close() error } // the default backend, made by the engine; closed with it
	obs          *observe.Observer

	turns *eng.Turns[*surface, *execCall] // by invocation id, with the idle reaper

	mu    sync.Mutex
	roots map[string]string // invocation id → root agent name
	// Blocks paused for approval (see approval.go), and messages for the
	// model about blocks that are gone.
	parked *eng.Parked[*turn]
}

// turnFor returns the turn of an invocation, creating it.
func (e *engine) turnFor(id string) (*turn, error) { return e.turns.Get(id) }

// acquire returns the turn of an invocation, creating it, marked in use so
// that the idle reaper leaves it alone; the caller must end the use (see
// execTool.Run).
func (e *engine) acquire(id string) (*turn, error) { return e.turns.Acquire(id) }

// prepare is the before-model hook.
func (e *engine) prepare(ctx agent.Context, req *model.LLMRequest) error {
	art := withArtifacts(ctx)
	s, err := e.surfaceFor(ctx, art)
	if err != nil {
		return err
	}
	if err := runHooks(ctx, s, e.toolsetHooks, req); err != nil {
		return err
	}
	if !e.cfg.DisableBlock {
		env, err := eng.SandboxEnvironment(ctx, e.cfg.Backend)
		if err != nil {
			return err
		}
		env.Discovery = true // the tools package always has search and describe
		env.Network = transport.NetworkOf(e.cfg.Backend)
		env.Direct = s.Direct(e.cfg.Direct)
		appendInstruction(req, s.Reg.Block(env, e.cfg.BlockBudget))
	}
	if note := s.UnavailableNote(); note != "" {
		appendInstruction(req, note)
	}
	addTool(req, e.tool[index(art)])
	for _, st := range s.DirectTools(e.cfg.Direct) {
		addTool(req, st.Tool)
	}
	return nil
}

// withArtifacts says whether ctx's invocation has an artifact service:
// without one, the model is shown no artifact tools, parameters or text.
func withArtifacts(ctx agent.Context) bool { return artifactsOf(ctx) != nil }

// index is 1 for true and 0 for false, for the engine's pairs.
func index(b bool) int {
	if b {
		return 1
	}
	return 0
}

// surfaceFor resolves the tool surface of ctx's invocation, once; art says
// whether the invocation has an artifact service.
func (e *engine) surfaceFor(ctx agent.ReadonlyContext, art bool) (*surface, error) {
	if s := e.static[index(art)]; s != nil {
		return s, nil
	}
	t, err := e.turnFor(ctx.InvocationID())
	if err != nil {
		return nil, err
	}
	return e.surfaceOf(ctx, t, art)
}

// surfaceOf resolves the tool surface of the turn t, once; again while a
// toolset of it is unavailable and the turn has not opened its sandbox,
// whose tools package is written from the surface when it opens.
func (e *engine) surfaceOf(ctx agent.ReadonlyContext, t *turn, art bool) (*surface, error) {
	if s, final := t.SettledSurface(missingToolsets); final {
		return s, nil
	}
	if st := e.static[index(art)]; st != nil {
		t.SetSurface(st)
		return st, nil
	}
	s, err := resolve(ctx, e.bare, e.toolsets, e.cfg.surfaceOptions(art), e.cfg.StrictToolsets)
	if err != nil {
		return nil, err
	}
	return t.SettleSurface(s, missingToolsets), nil
}

// missingToolsets says whether s lacks a toolset that failed to list its
// tools, so that a turn that has not opened its sandbox resolves it again.
func missingToolsets(s *surface) bool { return len(s.Unavailable) > 0 }

// appendInstruction appends text to the request's system instruction,
// separated from what is there by a blank line.
func appendInstruction(req *model.LLMRequest, text string) {
	if text == "" {
		return
	}
	if req.Config == nil {
		req.Config = &genai.GenerateContentConfig{}
	}
	si := req.Config.SystemInstruction
	if si == nil {
		req.Config.SystemInstruction = genai.NewContentFromText(text, genai.RoleUser)
		return
	}
	if n := len(si.Parts); n > 0 && si.Parts[n-1] != nil && si.Parts[n-1].Text != "" {
		si.Parts[n-1].Text = strings.TrimRight(si.Parts[n-1].Text, "\n") + "\n\n" + text
		return
	}
	si.Parts = append(si.Parts, genai.NewPartFromText(text))
}

// addTool declares t in the request and registers it as the tool the flow
// runs when the model calls it. A request that has it already is left as
// it is.
func addTool(req *model.LLMRequest, t runnableTool) {
	if req.Tools == nil {
		req.Tools = map[string]any{}
	}
	if _, ok := req.Tools[t.Name()]; ok {
		return
	}
	req.Tools[t.Name()] = t
	if req.Config == nil {
		req.Config = &genai.GenerateContentConfig{}
	}
	for _, gt := range req.Config.Tools {
		if gt != nil && gt.FunctionDeclarations != nil {
			gt.FunctionDeclarations = append(gt.FunctionDeclarations, t.Declaration())
			return
		}
	}
	req.Config.Tools = append(req.Config.Tools, &genai.Tool{FunctionDeclarations: []*genai.FunctionDeclaration{t.Declaration()}})
}

// setRoot, root and clearRoot track the agent each invocation started with.
func (e *engine) setRoot(invocation, agentName string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.roots[invocation] = agentName
}

func (e *engine) root(invocation string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.roots[invocation]
	return r, ok
}

func (e *engine) clearRoot(invocation string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.roots, invocation)
}

// release ends an invocation's turn and closes its sandbox. It is a no-op
// for an unknown invocation. A call still running keeps the sandbox until
// it returns.
func (e *engine) release(invocation string) { e.turns.Release(invocation) }

// close is hookSet.Close.
func (e *engine) close() error {
	// First: from now on no block is parked, and none is resumed.
	e.parked.Close()
	if !e.turns.Close() {
		return nil
	}
	if e.ownBackend != nil {
		return e.ownBackend.Close()
	}
	return nil
}
