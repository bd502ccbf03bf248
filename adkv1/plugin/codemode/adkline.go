package codemode

import (
	"context"
	"errors"
	"reflect"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/session"
)

// This file is written for ADK Go v1 by hand; every other file of the
// package is generated from the top-level plugin/codemode (ADK Go v2),
// whose adkline.go is this file's v2 counterpart. It holds how to reach, from the contexts ADK
// Go v1 hands to tools and callbacks, what the plugin needs that the
// contexts do not offer: the invocation, its agent, and whether an
// artifact service stands behind them. Like adk.go, it only reads, and
// fails closed.

// invocation returns the invocation context behind a callback or tool
// context made by ADK: NewToolContext and NewCallbackContext embed it as
// their context.Context.
func invocation(ctx context.Context) (agent.InvocationContext, bool) {
	for range 16 {
		if ic, ok := ctx.(agent.InvocationContext); ok {
			return ic, true
		}
		v := reflect.ValueOf(ctx)
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			if v.IsNil() {
				return nil, false
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return nil, false
		}
		f := v.FieldByName("Context")
		if !f.IsValid() || !f.CanInterface() || f.Kind() != reflect.Interface || f.IsNil() {
			return nil, false
		}
		next, ok := f.Interface().(context.Context)
		if !ok {
			return nil, false
		}
		ctx = next
	}
	return nil, false
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
// when the runner has no artifact service.
func artifactsOf(ctx agent.CallbackContext) agent.Artifacts { return ctx.Artifacts() }

// errNoInvocation means the invocation behind a callback context could not
// be found, so no tool context can be made for the request processors.
var errNoInvocation = errors.New("the invocation behind the model callback is not reachable with this ADK version")

// processorContext makes the tool context the flow passes to request
// processors, from the before-model callback's context.
func processorContext(ctx agent.CallbackContext) (agent.ToolContext, error) {
	ic, ok := invocation(ctx)
	if !ok {
		return nil, errNoInvocation
	}
	return agent.NewToolContext(ic, "", &session.EventActions{}, nil), nil
}
