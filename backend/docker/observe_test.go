package docker_test

import (
	"slices"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/adk-codemode/codemode/backend/docker"
	"github.com/adk-codemode/codemode/transport"
)

// TestStartTraced: a container's start marks its steps on the caller's
// span: the engine reached, the container created (with its image), and
// started.
func TestStartTraced(t *testing.T) {
	b := engine(t, docker.Config{})
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	ctx, span := tp.Tracer("test").Start(t.Context(), "start")
	s, err := b.Open(ctx, transport.SessionConfig{})
	span.End()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var events []string
	for _, e := range span.(sdktrace.ReadOnlySpan).Events() {
		events = append(events, e.Name)
		if e.Name == "codemode.sandbox.container_created" && len(e.Attributes) != 2 {
			t.Errorf("container_created attributes %v, want the image and the container", e.Attributes)
		}
	}
	if want := []string{"codemode.sandbox.engine_connected", "codemode.sandbox.container_created", "codemode.sandbox.container_started"}; !slices.Equal(events, want) {
		t.Errorf("start events %v, want %v", events, want)
	}
}
