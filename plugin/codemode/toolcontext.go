package codemode

import (
	"context"
	"errors"
	"iter"
	"maps"
	"sync"
	"time"

	"google.golang.org/genai"

	eng "github.com/adk-codemode/codemode/internal/host/engine"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
)

// execCall is one execute_code call in flight: the tool context ADK gave
// it, which the tool calls made by its code derive theirs from. mu guards
// the parent context's actions and state, which tool calls running in
// parallel share.
type execCall struct {
	parent agent.Context
	id     string // execute_code's function call id

	mu     sync.Mutex
	closed bool             // the execute_code call returned; late effects are dropped
	delta  map[string]int64 // artifacts saved during the call: name → highest version
	// results are the tool results of the call's blocks, saved as
	// artifacts.
	results eng.Results
}

// errCallEnded refuses effects that arrive after execute_code returned.
var errCallEnded = errors.New("codemode: the execute_code call that made this tool call has ended")

// errCallAbandoned refuses effects of a tool call that passed its timeout.
var errCallAbandoned = errors.New("codemode: this tool call passed its timeout; the code no longer waits for it")

// end marks the call returned, so effects that arrive later are refused,
// and returns the artifacts saved during it.
func (c *execCall) end() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return maps.Clone(c.delta)
}

// save saves an artifact through the execute_code call's artifacts, so the
// version lands on its event, and records it in the call's delta.
func (c *execCall) save(ctx context.Context, name string, part *genai.Part) (*artifact.SaveResponse, error) {
	return c.saveFor(ctx, nil, name, part)
}

// saveFor is save for the tool call ctl, refused once the call was
// abandoned at its timeout.
func (c *execCall) saveFor(ctx context.Context, ctl *eng.CallControl, name string, part *genai.Part) (*artifact.SaveResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errCallEnded
	}
	if ctl != nil && ctl.Abandoned() {
		return nil, errCallAbandoned
	}
	a := artifactsOf(c.parent)
	if a == nil {
		return nil, &ArtifactServiceUnavailableError{Tool: ToolName}
	}
	resp, err := a.Save(ctx, name, part)
	if err != nil {
		return nil, err
	}
	if resp == nil {
		return nil, errors.New("codemode: the artifact service returned no version")
	}
	if c.delta == nil {
		c.delta = map[string]int64{}
	}
	c.delta[name] = max(c.delta[name], resp.Version)
	// ADK's tracked artifacts record the last version saved; keep the
	// highest, so the event agrees with the delta under parallel saves.
	if pa := c.parent.Actions(); pa != nil {
		if pa.ArtifactDelta == nil {
			pa.ArtifactDelta = map[string]int64{}
		}
		pa.ArtifactDelta[name] = c.delta[name]
	}
	return resp, nil
}

// hasArtifacts says whether the execute_code call can save artifacts.
func (c *execCall) hasArtifacts() bool { return artifactsOf(c.parent) != nil }

// Enabled and Save are the execute_code call's artifacts as the engine
// saves a block's files and cut streams (engine.Artifacts).
func (c *execCall) Enabled() bool { return c.hasArtifacts() }

func (c *execCall) Save(ctx context.Context, name string, part *genai.Part) error {
	_, err := c.save(ctx, name, part)
	return err
}

// callContext is the ADK tool context of one tool call made from code. It
// reads through to the execute_code call's context, keeps its own actions,
// and is merged back into execute_code's actions when the call finishes.
type callContext struct {
	agent.Context // the execute_code call's context, for values and identity
	run           context.Context
	exec          *execCall
	ctl           *eng.CallControl
	id            string
	actions       *session.EventActions
}

var _ agent.Context = (*callContext)(nil)

func newCallContext(run context.Context, exec *execCall, id string, ctl *eng.CallControl) *callContext {
	if ctl == nil {
		ctl = &eng.CallControl{}
	}
	return &callContext{
		Context: exec.parent,
		run:     run,
		exec:    exec,
		ctl:     ctl,
		id:      id,
		actions: &session.EventActions{StateDelta: map[string]any{}, ArtifactDelta: map[string]int64{}},
	}
}

// Deadline, Done and Err follow the call's own context, which ends when the
// sandbox abandons the call or its timeout passes; Value reads through to
// the invocation.
func (c *callContext) Deadline() (time.Time, bool) { return c.run.Deadline() }
func (c *callContext) Done() <-chan struct{}       { return c.run.Done() }
func (c *callContext) Err() error                  { return c.run.Err() }

func (c *callContext) FunctionCallID() string         { return c.id }
func (c *callContext) Actions() *session.EventActions { return c.actions }

func (c *callContext) ToolConfirmation() *toolconfirmation.ToolConfirmation { return nil }

// RequestConfirmation records the request like ADK does; the block then
// pauses at the call until a person answers (see approval.go).
func (c *callContext) RequestConfirmation(hint string, payload any) error {
	c.exec.mu.Lock()
	defer c.exec.mu.Unlock()
	if c.actions.RequestedToolConfirmations == nil {
		c.actions.RequestedToolConfirmations = map[string]toolconfirmation.ToolConfirmation{}
	}
	c.actions.RequestedToolConfirmations[c.id] = toolconfirmation.ToolConfirmation{Hint: hint, Payload: payload}
	c.actions.SkipSummarization = true
	return nil
}

func (c *callContext) State() session.State { return callState{c} }

func (c *callContext) Artifacts() agent.Artifacts {
	a := artifactsOf(c.exec.parent)
	if a == nil {
		return nil
	}
	return callArtifacts{c: c, inner: a}
}

// callState reads the call's own writes first, then the execute_code
// call's state; writes stay in the call's delta until it is merged.
type callState struct{ c *callContext }

func (s callState) Get(key string) (any, error) {
	s.c.exec.mu.Lock()
	defer s.c.exec.mu.Unlock()
	if v, ok := s.c.actions.StateDelta[key]; ok {
		return v, nil
	}
	return s.c.exec.parent.State().Get(key)
}

func (s callState) Set(key string, val any) error {
	s.c.exec.mu.Lock()
	defer s.c.exec.mu.Unlock()
	s.c.actions.StateDelta[key] = val
	return nil
}

func (s callState) All() iter.Seq2[string, any] {
	s.c.exec.mu.Lock()
	all := map[string]any{}
	for k, v := range s.c.exec.parent.State().All() {
		all[k] = v
	}
	maps.Copy(all, s.c.actions.StateDelta)
	s.c.exec.mu.Unlock()
	return maps.All(all)
}

// callArtifacts saves through the execute_code call's artifacts, so the
// versions land on its event, and records them in the call's own delta.
type callArtifacts struct {
	c     *callContext
	inner agent.Artifacts
}

func (a callArtifacts) Save(ctx context.Context, name string, data *genai.Part) (*artifact.SaveResponse, error) {
	resp, err := a.c.exec.saveFor(ctx, a.c.ctl, name, data)
	if err != nil {
		return nil, err
	}
	a.c.exec.mu.Lock()
	a.c.actions.ArtifactDelta[name] = max(a.c.actions.ArtifactDelta[name], resp.Version)
	a.c.exec.mu.Unlock()
	return resp, nil
}

func (a callArtifacts) List(ctx context.Context) (*artifact.ListResponse, error) {
	return a.inner.List(ctx)
}

func (a callArtifacts) Load(ctx context.Context, name string) (*artifact.LoadResponse, error) {
	return a.inner.Load(ctx, name)
}

func (a callArtifacts) LoadVersion(ctx context.Context, name string, version int) (*artifact.LoadResponse, error) {
	return a.inner.LoadVersion(ctx, name, version)
}

// merge folds the call's state and artifact deltas into the execute_code
// call's, so they land on its event. Actions that code cannot honour are
// checked before and never merged. It reports false, merging nothing, for
// a call abandoned at its timeout; otherwise the call counts as completed.
func (c *callContext) merge() bool {
	return c.ctl.Complete(func() {
		c.exec.mu.Lock()
		defer c.exec.mu.Unlock()
		if c.exec.closed {
			return
		}
		st := c.exec.parent.State()
		for k, v := range c.actions.StateDelta {
			_ = st.Set(k, v)
		}
		pa := c.exec.parent.Actions()
		for k, v := range c.actions.ArtifactDelta {
			if pa.ArtifactDelta == nil {
				pa.ArtifactDelta = map[string]int64{}
			}
			pa.ArtifactDelta[k] = max(pa.ArtifactDelta[k], v)
		}
	})
}
