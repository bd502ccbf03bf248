package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/transport"
)

// geminiReplies are what the loopback Gemini API answers, in order: one
// execute_code call, then the final answer.
var geminiReplies = []string{
	`{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me look that up."},{"functionCall":{"name":"execute_code","args":{"code":"from tools import get_weather\nw = get_weather(city=\"Oslo\")\nprint(\"oslo is\", w[\"conditions\"])"}}}]},"finishReason":"STOP"}],"modelVersion":"loopback"}`,
	`{"candidates":[{"content":{"role":"model","parts":[{"text":"Oslo is clear and 4 °C."}]},"finishReason":"STOP"}],"modelVersion":"loopback"}`,
}

// TestGeminiDemo runs the demo with GOOGLE_API_KEY set and genai's own
// GOOGLE_GEMINI_BASE_URL pointing at a loopback server that speaks the
// Gemini API: the demo takes the Gemini path, not the scripted one.
func TestGeminiDemo(t *testing.T) {
	const key = "demo-test-key-5e1f"
	const modelName = "gemini-loopback"

	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		mu.Lock()
		n := len(bodies)
		bodies = append(bodies, body)
		mu.Unlock()
		var req map[string]any
		switch {
		case err != nil:
			t.Errorf("request %d: %v", n, err)
		case r.Method != http.MethodPost || r.URL.Path != "/v1beta/models/"+modelName+":generateContent":
			t.Errorf("request %d: %s %s, want POST /v1beta/models/%s:generateContent", n, r.Method, r.URL.Path, modelName)
		case r.Header.Get("x-goog-api-key") != key:
			t.Errorf("request %d: x-goog-api-key %q, want the key from GOOGLE_API_KEY", n, r.Header.Get("x-goog-api-key"))
		case json.Unmarshal(body, &req) != nil:
			t.Errorf("request %d: the body is not JSON: %s", n, body)
		case n >= len(geminiReplies):
			t.Errorf("request %d: only %d replies are scripted", n, len(geminiReplies))
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, geminiReplies[n])
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"refused by the test server"}}`)
	}))
	t.Cleanup(srv.Close)

	t.Setenv("GOOGLE_API_KEY", key)
	t.Setenv("GOOGLE_GEMINI_BASE_URL", srv.URL)
	backend := "jail"
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	s, err := (&jail.Backend{}).Open(ctx, transport.SessionConfig{})
	cancel()
	switch {
	case errors.Is(err, jail.ErrUnsupported):
		hostcap.Without(t, hostcap.UserNS, "the unsandboxed backend", err)
		backend = "unsandboxed"
	case err != nil:
		t.Fatal(err)
	default:
		_ = s.Close()
	}

	var out bytes.Buffer
	if err := run(t.Context(), &out, modelName, backend, "What is the weather in Oslo?"); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	transcript := out.String()
	for _, want := range []string{
		"model: " + modelName + " (Gemini)",
		"user: What is the weather in Oslo?",
		"model: Let me look that up.",
		`↳ tool get_weather({"city":"Oslo"}) → {"city":"Oslo","conditions":"clear","temp_c":4}`,
		"oslo is clear",
		"model: Oslo is clear and 4 °C.",
	} {
		if !strings.Contains(transcript, want) {
			t.Errorf("transcript lacks %q:\n%s", want, transcript)
		}
	}
	if strings.Contains(transcript, "scripted model") {
		t.Errorf("the demo replayed its scripted model with GOOGLE_API_KEY set:\n%s", transcript)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 {
		t.Fatalf("the Gemini API got %d requests, want 2", len(bodies))
	}
	// The second request answers the call with what the code printed.
	var second struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				FunctionResponse *struct {
					Name     string         `json:"name"`
					Response map[string]any `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(bodies[1], &second); err != nil {
		t.Fatal(err)
	}
	var answered bool
	for _, c := range second.Contents {
		for _, p := range c.Parts {
			if fr := p.FunctionResponse; fr != nil && fr.Name == "execute_code" && fr.Response["stdout"] == "oslo is clear\n" {
				answered = true
			}
		}
	}
	if !answered {
		t.Errorf("the second request carries no execute_code response with the code's output: %s", bodies[1])
	}
	for i, b := range bodies {
		if bytes.Contains(b, []byte(key)) {
			t.Errorf("request %d carries the API key in its body", i)
		}
	}
}
