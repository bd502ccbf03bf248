package codemode

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"unsafe"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/session"
)

// This file is written for each ADK line: adkv1/plugin/codemode has its
// own for ADK Go v1, which is not generated from this one. It holds how to
// reach, from the contexts ADK v2 hands to tools and callbacks, what the
// plugin needs that the contexts do not offer: the invocation, its agent,
// and whether an artifact service stands behind them.
//
// ADK v2 passes tools and callbacks one agent.Context, made by
// NewToolContext or NewCallbackContext: a wrapper (toolContextWrapper,
// callbackContextWrapper) around a commonContext, which keeps the
// invocation in an unexported field. The wrappers answer Agent() with nil
// and InvocationContext() with nil, so the plugin reads those fields.
// Like adk.go, this only reads, and fails closed: when the layout is not
// the one of ADK v2.2, no invocation is found and tool calls from code are
// refused with an error naming the reason.

// agentPkg is the package of ADK v2's context types.
const agentPkg = "google.golang.org/adk/v2/agent"

// hops names, for each of ADK v2's context types, the field that holds
// the context it wraps.
var hops = map[string]string{
	"toolContextWrapper":     "context",
	"callbackContextWrapper": "context",
	"commonContext":          "invocationContext",
}

// invocation returns the invocation context behind a callback or tool
// context made by ADK v2.
func invocation(ctx context.Context) (agent.InvocationContext, bool) {
	var cur any = ctx
	for range 16 {
		v := reflect.ValueOf(cur)
		if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
			return nil, false
		}
		t := v.Type().Elem()
		if t.PkgPath() == agentPkg {
			name, ok := hops[t.Name()]
			if !ok {
				return nil, false
			}
			next, ok := readField(v.Elem(), name)
			if !ok {
				return nil, false
			}
			cur = next
			continue
		}
		// The invocation itself is one of ADK's own types (the runner's,
		// in internal/context); a context of any other package is not
		// taken for one.
		if !strings.HasPrefix(t.PkgPath(), "google.golang.org/adk/v2/") {
			return nil, false
		}
		ic, ok := cur.(agent.InvocationContext)
		return ic, ok
	}
	return nil, false
}

// readField returns the value of the named interface field of the
// addressable struct s, exported or not, or false when s has no such
// field or it is nil.
func readField(s reflect.Value, name string) (any, bool) {
	f := s.FieldByName(name)
	if !f.IsValid() || f.Kind() != reflect.Interface || f.IsNil() || !f.CanAddr() {
		return nil, false
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface(), true
}

// agentOf returns the agent whose invocation made ctx.
func agentOf(ctx context.Context) (agent.Agent, bool) {
	ic, ok := invocation(ctx)
	if !ok || ic.Agent() == nil {
		return nil, false
	}
	return ic.Agent(), true
}

// artifactsOf returns the artifacts of the context's invocation, or nil
// when the runner has no artifact service. ADK v2's tool context wraps
// the invocation's artifacts to track saves even when there are none, so
// a nil service shows only inside the wrapper.
func artifactsOf(ctx agent.Context) agent.Artifacts {
	a := ctx.Artifacts()
	if a == nil {
		return nil
	}
	v := reflect.ValueOf(a)
	if v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Kind() == reflect.Struct &&
		v.Type().Elem().PkgPath() == agentPkg && v.Type().Elem().Name() == "trackedArtifacts" {
		inner := v.Elem().FieldByName("Artifacts")
		if !inner.IsValid() || inner.Kind() != reflect.Interface || inner.IsNil() {
			return nil
		}
	}
	return a
}

// errNoInvocation means the invocation behind a callback context could not
// be found, so no tool context can be made for the request processors.
var errNoInvocation = errors.New("the invocation behind the model callback is not reachable with this ADK version")

// processorContext makes the tool context the flow passes to request
// processors, from the before-model callback's context.
func processorContext(ctx agent.Context) (agent.Context, error) {
	ic, ok := invocation(ctx)
	if !ok {
		return nil, errNoInvocation
	}
	return agent.NewToolContext(ic, "", &session.EventActions{}, nil), nil
}
