package codemode

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
)

// This file holds what depends on how ADK Go lays out its unexported
// state and is the same in v1.7 and v2.2; adkline.go holds what differs
// between the two lines. ADK keeps its plugin manager and an agent's tool
// callbacks internal, yet a tool called from code must pass through both,
// exactly as a direct call does. Everything here only reads, never writes,
// and every path fails closed: when the layout is not what it expects, tool
// calls from code are refused with an error naming the reason, rather than
// run without the callbacks.

// runnableTool is the method set of ADK's internal function tool: the flow
// runs a tool that has it.
type runnableTool interface {
	tool.Tool
	Declaration() *genai.FunctionDeclaration
	Run(ctx agent.Context, args any) (map[string]any, error)
}

// toolCallbacks is the part of ADK's plugin manager that the flow uses
// around a tool call. The runner stores the manager in the invocation's
// context.
type toolCallbacks interface {
	RunBeforeToolCallback(ctx agent.Context, t tool.Tool, args map[string]any) (map[string]any, error)
	RunAfterToolCallback(ctx agent.Context, t tool.Tool, args, result map[string]any, err error) (map[string]any, error)
	RunOnToolErrorCallback(ctx agent.Context, t tool.Tool, args map[string]any, err error) (map[string]any, error)
}

// pluginKeyPkg is the package of the context key under which the runner
// stores its plugin manager.
const pluginKeyPkg = "google.golang.org/adk/v2/internal/plugininternal/plugincontext"

// pluginKey caches the runner's context key once found; it is a constant
// of ADK, the same for every invocation.
var pluginKey atomic.Value // of keyBox

type keyBox struct{ key any }

var contextType = reflect.TypeFor[context.Context]()

// errNoPluginManager means the runner's plugin manager could not be found.
var errNoPluginManager = errors.New("the runner's plugin manager is not reachable with this ADK version")

// pluginManager returns the runner's plugin manager from ctx, or nil when
// ctx does not come from a runner.
func pluginManager(ctx context.Context) toolCallbacks {
	if b, ok := pluginKey.Load().(keyBox); ok {
		m, _ := ctx.Value(b.key).(toolCallbacks)
		return m
	}
	key, ok := findPluginKey(ctx)
	if !ok {
		return nil
	}
	pluginKey.Store(keyBox{key})
	m, _ := ctx.Value(key).(toolCallbacks)
	return m
}

// findPluginKey walks ctx's chain of parents looking for the key of the
// runner's plugin manager, and returns a key equal to it. It reads
// unexported fields but never uses their values as anything but a type and
// an integer.
func findPluginKey(ctx context.Context) (any, bool) {
	seen := map[uintptr]bool{}
	queue := []reflect.Value{reflect.ValueOf(ctx)}
	for steps := 0; len(queue) > 0 && steps < 512; steps++ {
		v := queue[0]
		queue = queue[1:]
		for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
			if v.IsNil() {
				break
			}
			if v.Kind() == reflect.Pointer {
				if seen[v.Pointer()] {
					v = reflect.Value{}
					break
				}
				seen[v.Pointer()] = true
			}
			v = v.Elem()
		}
		if !v.IsValid() || v.Kind() != reflect.Struct {
			continue
		}
		if k := v.FieldByName("key"); k.IsValid() && k.Kind() == reflect.Interface && !k.IsNil() {
			kt := k.Elem().Type()
			if kt.PkgPath() == pluginKeyPkg && kt.Kind() == reflect.Int {
				key := reflect.New(kt).Elem()
				key.SetInt(k.Elem().Int())
				return key.Interface(), true
			}
		}
		for i := range v.NumField() {
			f := v.Field(i)
			if (f.Kind() == reflect.Interface || f.Kind() == reflect.Pointer) && !f.IsNil() &&
				(f.Type().Implements(contextType) || f.Kind() == reflect.Interface && f.Elem().Type().Implements(contextType)) {
				queue = append(queue, f)
			}
		}
	}
	return nil, false
}

// agentCallbacks are an LLM agent's own tool callbacks.
type agentCallbacks struct {
	before  []llmagent.BeforeToolCallback
	after   []llmagent.AfterToolCallback
	onError []llmagent.OnToolErrorCallback
}

// agentToolCallbacks reads the tool callbacks of an agent built by
// llmagent.New.
func agentToolCallbacks(a agent.Agent) (agentCallbacks, error) {
	cfg, err := agentConfig(a, "tool callbacks")
	if err != nil {
		return agentCallbacks{}, err
	}
	return agentCallbacks{before: cfg.BeforeToolCallbacks, after: cfg.AfterToolCallbacks, onError: cfg.OnToolErrorCallbacks}, nil
}

// agentConfig reads the Config of an agent built by llmagent.New, which
// keeps it in the state of the base agent it embeds. Only exported fields
// are read. what names what the caller wanted, for the error.
func agentConfig(a agent.Agent, what string) (llmagent.Config, error) {
	v := reflect.ValueOf(a)
	for _, step := range []string{"", "Agent", "", "State", "Config"} {
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			if v.IsNil() {
				return llmagent.Config{}, fmt.Errorf("cannot read the %s of agent %q with this ADK version", what, a.Name())
			}
			v = v.Elem()
		}
		if step == "" {
			continue
		}
		if v.Kind() != reflect.Struct {
			return llmagent.Config{}, fmt.Errorf("cannot read the %s of agent %q with this ADK version", what, a.Name())
		}
		v = v.FieldByName(step)
		if !v.IsValid() || !v.CanInterface() {
			return llmagent.Config{}, fmt.Errorf("cannot read the %s of agent %q with this ADK version", what, a.Name())
		}
	}
	cfg, ok := v.Interface().(llmagent.Config)
	if !ok {
		return llmagent.Config{}, fmt.Errorf("agent %q is not an LLM agent built by llmagent.New", a.Name())
	}
	return cfg, nil
}

// requestProcessor is the method set of ADK's internal RequestProcessor
// (internal/toolinternal). Before each model request the flow calls it on
// every tool of the agent and then on every toolset that has it; a tool
// packs its declaration into the request, and some do more, such as
// skilltoolset adding its list of skills to the system instruction. Tools
// behind execute_code are not the agent's, so the plugin calls it itself.
type requestProcessor interface {
	ProcessRequest(ctx agent.Context, req *model.LLMRequest) error
}

// directOnly names the ADK packages whose tools only do their work as
// direct tools of the agent, and why: such a tool is refused behind
// execute_code.
var directOnly = map[string]string{
	"google.golang.org/adk/v2/tool/loadartifactstool": "it attaches the artifacts to the model request that follows the model's own call to it, and a call from code is never one",
}

// directOnlyReason says why t works only as a direct tool, if it does.
func directOnlyReason(t tool.Tool) (string, bool) {
	ty := reflect.TypeOf(t)
	for ty != nil && ty.Kind() == reflect.Pointer {
		ty = ty.Elem()
	}
	if ty == nil {
		return "", false
	}
	why, ok := directOnly[ty.PkgPath()]
	return why, ok
}

// packOnlyPkgs are the ADK packages whose tools' ProcessRequest, read in
// ADK v1.7.0 and v2.2.0, does nothing but pack the tool's declaration into
// the request (toolutils.PackTool). Behind execute_code the stub takes the
// place of that declaration, so the plugin does not call it.
var packOnlyPkgs = map[string]bool{
	"google.golang.org/adk/v2/tool/functiontool": true,
	"google.golang.org/adk/v2/tool/mcptoolset":   true,
}

// packOnly reports whether t's request processor only packs t.
func packOnly(t any) bool {
	ty := reflect.TypeOf(t)
	for ty != nil && ty.Kind() == reflect.Pointer {
		ty = ty.Elem()
	}
	return ty != nil && packOnlyPkgs[ty.PkgPath()]
}
