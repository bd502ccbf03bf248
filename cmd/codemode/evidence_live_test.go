package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// geminiRequest is the part of a generateContent request the loopback
// server reads.
type geminiRequest struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			Text             string `json:"text"`
			FunctionResponse *struct {
				Name     string         `json:"name"`
				Response map[string]any `json:"response"`
			} `json:"functionResponse"`
		} `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

func (r *geminiRequest) declares(name string) bool {
	for _, t := range r.Tools {
		for _, d := range t.FunctionDeclarations {
			if d.Name == name {
				return true
			}
		}
	}
	return false
}

// loopbackGemini speaks the Gemini API as a model that solves the lookup
// shape: it calls get_customer directly, or through execute_code when the
// request declares it, and answers with the tier it read, or with
// wrongAnswer when that is set.
func loopbackGemini(t *testing.T, key, modelName, wrongAnswer string) (*httptest.Server, func() [][]byte) {
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		mu.Lock()
		bodies = append(bodies, body)
		mu.Unlock()
		var req geminiRequest
		w.Header().Set("Content-Type", "application/json")
		switch {
		case err != nil, json.Unmarshal(body, &req) != nil || len(req.Contents) == 0:
			t.Errorf("a request that is not a generateContent body: %v %s", err, body)
		case r.Method != http.MethodPost || r.URL.Path != "/v1beta/models/"+modelName+":generateContent":
			t.Errorf("%s %s, want POST /v1beta/models/%s:generateContent", r.Method, r.URL.Path, modelName)
		case r.Header.Get("x-goog-api-key") != key:
			t.Errorf("x-goog-api-key %q, want the key from GOOGLE_API_KEY", r.Header.Get("x-goog-api-key"))
		default:
			_, _ = io.WriteString(w, reply(t, &req, wrongAnswer))
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"refused by the test server"}}`)
	}))
	t.Cleanup(srv.Close)
	return srv, func() [][]byte {
		mu.Lock()
		defer mu.Unlock()
		return bodies
	}
}

func reply(t *testing.T, req *geminiRequest, wrongAnswer string) string {
	last := req.Contents[len(req.Contents)-1]
	var call string
	for _, p := range last.Parts {
		if fr := p.FunctionResponse; fr != nil {
			tier, _ := fr.Response["tier"].(string)
			if fr.Name == "execute_code" {
				out, _ := fr.Response["stdout"].(string)
				tier = strings.TrimSpace(out)
			}
			if wrongAnswer != "" {
				tier = wrongAnswer
			}
			return fmt.Sprintf(`{"candidates":[{"content":{"role":"model","parts":[{"text":"Customer C-0137 is on the %s tier."}]},"finishReason":"STOP"}]}`, tier)
		}
	}
	switch {
	case req.declares("execute_code"):
		call = `{"name":"execute_code","args":{"code":"from tools import get_customer\nprint(get_customer(customer_id=\"C-0137\")[\"tier\"])"}}`
	case req.declares("get_customer"):
		call = `{"name":"get_customer","args":{"customer_id":"C-0137"}}`
	default:
		t.Errorf("the request declares neither execute_code nor get_customer")
	}
	return `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":` + call + `}]},"finishReason":"STOP"}]}`
}

// TestEvidenceLive runs the lookup shape with --live against a loopback
// server speaking the Gemini API (genai's GOOGLE_GEMINI_BASE_URL), once
// with a model that answers right and once with one that does not: the
// answers are scored, and a wrong one is counted, not a failure.
func TestEvidenceLive(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	s, err := (&jail.Backend{}).Open(ctx, transport.SessionConfig{})
	cancel()
	if errors.Is(err, jail.ErrUnsupported) {
		hostcap.Missing(t, hostcap.UserNS, err)
	}
	if err != nil {
		t.Fatalf("the jail does not start: %v", err)
	}
	_ = s.Close()

	const key = "evidence-test-key-81c2"
	const modelName = "gemini-loopback"
	for _, c := range []struct {
		name, wrong, want string
	}{
		{"right", "", "1/1"},
		{"wrong", "tin", "0/1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, bodies := loopbackGemini(t, key, modelName, c.wrong)
			t.Setenv("GOOGLE_API_KEY", key)
			t.Setenv("GOOGLE_GEMINI_BASE_URL", srv.URL)
			var stdout, stderr strings.Builder
			code := run([]string{"evidence", "--live", "--model", modelName, "--shapes", "lookup", "--conditions", "direct,code", "--runs", "1"}, nil, &stdout, &stderr)
			if code != 0 {
				t.Fatalf("exit %d, stderr %s", code, stderr.String())
			}
			table := stdout.String()
			for _, want := range []string{
				"| one lookup (1 call) | direct | " + c.want + " | 2 |",
				"| one lookup (1 call) | code | " + c.want + " | 2 |",
				"Live model " + modelName,
			} {
				if !strings.Contains(table, want) {
					t.Errorf("the table lacks %q:\n%s", want, table)
				}
			}
			got := bodies()
			if len(got) != 4 {
				t.Errorf("the Gemini API got %d requests, want 2 per condition", len(got))
			}
			for i, b := range got {
				if bytes.Contains(b, []byte(key)) {
					t.Errorf("request %d carries the API key in its body", i)
				}
			}
		})
	}
}

// TestEvidenceLiveWithoutKey: --live without GOOGLE_API_KEY says so and
// runs nothing.
func TestEvidenceLiveWithoutKey(t *testing.T) {
	t.Setenv("GOOGLE_API_KEY", "")
	var stdout, stderr strings.Builder
	code := run([]string{"evidence", "--live"}, nil, &stdout, &stderr)
	if code != 0 || !strings.Contains(stderr.String(), "GOOGLE_API_KEY is not set") || stdout.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q: want the live mode skipped with a message", code, stdout.String(), stderr.String())
	}
}
