package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// shownAttributes are the span attributes the trace tree prints, in order.
var shownAttributes = []attribute.Key{
	"codemode.sandbox.start_path", "codemode.block.outcome", "codemode.block.exception",
	"codemode.tool.outcome", "error.type", "codemode.tool_calls", "gen_ai.request.model",
}

// printTrace prints the spans rec recorded as trees, one per trace: each
// span with its duration and the attributes a person reads first,
// children in the order they started.
func printTrace(out io.Writer, rec *tracetest.SpanRecorder) {
	spans := rec.Ended()
	byID := map[string]sdktrace.ReadOnlySpan{}
	children := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID().String()] = s
	}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range spans {
		p := s.Parent().SpanID().String()
		if _, ok := byID[p]; ok && s.Parent().IsValid() {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	byStart := func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) }
	slices.SortFunc(roots, byStart)
	fmt.Fprintln(out, "\ntrace:")
	var walk func(s sdktrace.ReadOnlySpan, prefix string, last bool)
	walk = func(s sdktrace.ReadOnlySpan, prefix string, last bool) {
		branch, next := "├─ ", "│  "
		if last {
			branch, next = "└─ ", "   "
		}
		fmt.Fprintf(out, "%s%s%s %s%s\n", prefix, branch, s.Name(), s.EndTime().Sub(s.StartTime()).Round(10*time.Microsecond), attributes(s))
		kids := children[s.SpanContext().SpanID().String()]
		slices.SortFunc(kids, byStart)
		for i, k := range kids {
			walk(k, prefix+next, i == len(kids)-1)
		}
	}
	for i, r := range roots {
		walk(r, "", i == len(roots)-1)
	}
}

// attributes are the shown attributes s has, as " key=value ...".
func attributes(s sdktrace.ReadOnlySpan) string {
	var parts []string
	for _, k := range shownAttributes {
		for _, a := range s.Attributes() {
			if a.Key == k && a.Value.String() != "" {
				parts = append(parts, string(k[strings.LastIndexByte(string(k), '.')+1:])+"="+a.Value.String())
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "  " + strings.Join(parts, " ")
}
