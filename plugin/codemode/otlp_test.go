package codemode

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"google.golang.org/adk/v2/tool"

	"github.com/adk-codemode/codemode/internal/both/observe"
	"github.com/adk-codemode/codemode/internal/testsupport/adksuite"
)

// TestOTLPExport sends a turn's spans over OTLP/HTTP to a receiver on
// loopback, which decodes them with the OTLP protobuf types: the block,
// the sandbox start and the tool call arrive, in Code Mode's scope, with
// their parents.
func TestOTLPExport(t *testing.T) {
	var mu sync.Mutex
	var got []*coltrace.ExportTraceServiceRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want a protobuf POST to /v1/traces", http.StatusBadRequest)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req := &coltrace.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(body, req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	exp, err := otlptracehttp.New(t.Context(), otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(t.Context()) }()

	m := adksuite.NewScript().On("go", adksuite.Exec(`from tools import get_weather
print(get_weather(city="Paris")["temp_c"])`), adksuite.Say("ok"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{Tools: append([]tool.Tool{}, weatherTools(t)...), TracerProvider: tp}})
	wantClean(t, outputs(f.turn(t.Context(), "s1", "go"))[0])
	if err := tp.ForceFlush(t.Context()); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	names := map[string]string{} // span id -> name
	parents := map[string]string{}
	for _, req := range got {
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				if ss.Scope.GetName() != observe.ScopeName {
					t.Errorf("a span of scope %q", ss.Scope.GetName())
				}
				for _, s := range ss.Spans {
					id := string(s.SpanId)
					names[id] = s.Name
					parents[id] = string(s.ParentSpanId)
				}
			}
		}
	}
	var tree []string
	for id, name := range names {
		tree = append(tree, names[parents[id]]+" > "+name)
	}
	want := []string{" > codemode.block", "codemode.block > codemode.sandbox.start", "codemode.block > execute_tool get_weather"}
	for _, w := range want {
		found := false
		for _, e := range tree {
			found = found || e == w
		}
		if !found {
			t.Errorf("received spans %s; want %q", strings.Join(tree, ", "), w)
		}
	}
}

func wantClean(t *testing.T, out map[string]any) {
	t.Helper()
	if out["stderr"] != "" {
		t.Fatalf("stderr: %s\nstdout: %s", out["stderr"], out["stdout"])
	}
}
