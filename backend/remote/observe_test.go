package remote_test

import (
	"slices"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/adk-codemode/codemode/backend/remote"
	"github.com/adk-codemode/codemode/transport"
)

// TestStartAndResumeTraced: a session's start marks its steps on the
// caller's span (provisioned, connected, files sent), and a resume after
// a cut link is a span of its own from the global provider.
func TestStartAndResumeTraced(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	inner := provisioner(t)
	b := newBackend(t, remote.Config{Provision: inner, Secret: testSecret})
	ctx, span := tp.Tracer("test").Start(t.Context(), "start")
	s, err := b.Open(ctx, transport.SessionConfig{})
	span.End()
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	var events []string
	for _, e := range span.(sdktrace.ReadOnlySpan).Events() {
		events = append(events, e.Name)
	}
	if want := []string{"codemode.sandbox.provisioned", "codemode.sandbox.connected", "codemode.sandbox.files_sent"}; !slices.Equal(events, want) {
		t.Errorf("start events %v, want %v", events, want)
	}

	srv := startServer(t, nil)
	p := startProxy(t, srv.addr)
	rs := open(t, resumingBackend(t, p.URL()), transport.SessionConfig{})
	execOK(t, rs, "x = 41")
	p.cut()
	if got := execOK(t, rs, "print(x + 1)").Stdout; got != "42\n" {
		t.Errorf("stdout %q after the resume, want 42", got)
	}
	var resumes int
	for _, sp := range rec.Ended() {
		if sp.Name() == "codemode.sandbox.resume" && sp.Status().Code != codes.Error {
			resumes++
		}
	}
	if resumes == 0 {
		t.Error("no codemode.sandbox.resume span for the resumed session")
	}
}
