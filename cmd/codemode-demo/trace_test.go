package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/adk-codemode/codemode/backend/jail"
)

// TestDemoTrace runs the scripted demo with a recording tracer provider
// and prints its trace as the -trace flag does: ADK's spans with Code
// Mode's under them.
func TestDemoTrace(t *testing.T) {
	requireJail(t)
	rec := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	b := &jail.Backend{}
	t.Cleanup(func() { _ = b.Close() })
	if err := converse(t.Context(), io.Discard, &scriptedModel{}, b, task); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	printTrace(&out, rec)
	tree := out.String()
	for _, want := range []string{
		"└─ invoke_agent weather_assistant",
		"   ├─ execute_tool execute_code",
		"   │  └─ codemode.block",
		"   │     ├─ codemode.sandbox.start",
		"   │     ├─ execute_tool get_weather",
		"outcome=ok tool_calls=6",
		"start_path=",
	} {
		if !strings.Contains(tree, want) {
			t.Errorf("trace lacks %q:\n%s", want, tree)
		}
	}
}
