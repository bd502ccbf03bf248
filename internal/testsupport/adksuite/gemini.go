package adksuite

// The real model path, offline: ADK's Gemini model, over the genai client,
// talks to a loopback server that speaks the Gemini API. The server checks
// every request as strictly as the API's documented request format allows
// and plays a scripted conversation: a call of execute_code whose code
// calls a real tool, then a final answer once the function response has
// come back. The line builds the model (Setup.Gemini) pointed at the
// server, so what goes over the wire is checked on both ADK lines.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/genai"
)

// geminiTests are the model path through ADK's Gemini model: the requests
// it sends the API and what comes back of them.
var geminiTests = []test{
	{"GeminiPath", testGeminiPath},
}

// The Gemini API's request body (v1beta GenerateContentRequest), as far as
// a client may fill it in. Decoding with unknown fields disallowed turns a
// field the API does not know into a failure.

type geminiRequest struct {
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction,omitempty"`
	Tools             []geminiTool    `json:"tools,omitempty"`
	ToolConfig        json.RawMessage `json:"toolConfig,omitempty"`
	SafetySettings    json.RawMessage `json:"safetySettings,omitempty"`
	GenerationConfig  json.RawMessage `json:"generationConfig,omitempty"`
	CachedContent     string          `json:"cachedContent,omitempty"`
	Labels            json.RawMessage `json:"labels,omitempty"`
}

type geminiContent struct {
	Role  string       `json:"role,omitempty"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text                string                  `json:"text,omitempty"`
	Thought             bool                    `json:"thought,omitempty"`
	ThoughtSignature    []byte                  `json:"thoughtSignature,omitempty"`
	FunctionCall        *geminiFunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse    *geminiFunctionResponse `json:"functionResponse,omitempty"`
	InlineData          json.RawMessage         `json:"inlineData,omitempty"`
	FileData            json.RawMessage         `json:"fileData,omitempty"`
	ExecutableCode      json.RawMessage         `json:"executableCode,omitempty"`
	CodeExecutionResult json.RawMessage         `json:"codeExecutionResult,omitempty"`
	VideoMetadata       json.RawMessage         `json:"videoMetadata,omitempty"`
	PartMetadata        json.RawMessage         `json:"partMetadata,omitempty"`
}

type geminiFunctionCall struct {
	ID   string         `json:"id,omitempty"`
	Name string         `json:"name"`
	Args map[string]any `json:"args,omitempty"`
}

type geminiFunctionResponse struct {
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name"`
	Response     map[string]any  `json:"response"`
	WillContinue *bool           `json:"willContinue,omitempty"`
	Scheduling   string          `json:"scheduling,omitempty"`
	Parts        json.RawMessage `json:"parts,omitempty"`
}

type geminiTool struct {
	FunctionDeclarations  []geminiFunctionDeclaration `json:"functionDeclarations,omitempty"`
	GoogleSearch          json.RawMessage             `json:"googleSearch,omitempty"`
	GoogleSearchRetrieval json.RawMessage             `json:"googleSearchRetrieval,omitempty"`
	CodeExecution         json.RawMessage             `json:"codeExecution,omitempty"`
	URLContext            json.RawMessage             `json:"urlContext,omitempty"`
}

type geminiFunctionDeclaration struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	Behavior             string          `json:"behavior,omitempty"`
	Parameters           json.RawMessage `json:"parameters,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
	Response             json.RawMessage `json:"response,omitempty"`
	ResponseJSONSchema   json.RawMessage `json:"responseJsonSchema,omitempty"`
}

// geminiFunctionName is the API's rule for a function's name.
var geminiFunctionName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$`)

// geminiSchemaKeys are the keywords the API documents for
// parametersJsonSchema, and geminiOpenAPIKeys the fields of its
// OpenAPI-style Schema in parameters. A keyword outside them may be
// refused or ignored, so the check refuses it.
var (
	geminiSchemaKeys = geminiKeySet("$id", "$defs", "$ref", "$anchor", "type", "format", "title", "description", "enum",
		"items", "prefixItems", "minItems", "maxItems", "minimum", "maximum", "anyOf", "oneOf",
		"properties", "additionalProperties", "required", "propertyOrdering")
	geminiOpenAPIKeys = geminiKeySet("type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
		"properties", "required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern",
		"example", "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum")
	geminiSchemaTypes = geminiKeySet("string", "number", "integer", "boolean", "array", "object", "null")
)

func geminiKeySet(keys ...string) map[string]bool {
	m := map[string]bool{}
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// checkGeminiSchema reports what in schema s the API would refuse.
func checkGeminiSchema(path string, s any, allowed map[string]bool) []string {
	m, ok := s.(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("%s: a schema must be an object, got %T", path, s)}
	}
	var bad []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !allowed[k] {
			bad = append(bad, fmt.Sprintf("%s: keyword %q is not accepted", path, k))
		}
	}
	if t, ok := m["type"]; ok {
		if ts, ok := t.(string); !ok || !geminiSchemaTypes[strings.ToLower(ts)] {
			bad = append(bad, fmt.Sprintf("%s: type %v is not a type the API knows", path, t))
		}
	}
	if props, ok := m["properties"]; ok {
		pm, ok := props.(map[string]any)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: properties must be an object", path))
		}
		for _, k := range slices.Sorted(maps.Keys(pm)) {
			bad = append(bad, checkGeminiSchema(path+".properties."+k, pm[k], allowed)...)
		}
	}
	if req, ok := m["required"]; ok {
		rl, ok := req.([]any)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: required must be a list", path))
		}
		pm, _ := m["properties"].(map[string]any)
		for _, r := range rl {
			if name, ok := r.(string); !ok || pm[name] == nil {
				bad = append(bad, fmt.Sprintf("%s: required names %v, which is not a property", path, r))
			}
		}
	}
	if items, ok := m["items"]; ok {
		bad = append(bad, checkGeminiSchema(path+".items", items, allowed)...)
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		alts, _ := m[k].([]any)
		for i, a := range alts {
			bad = append(bad, checkGeminiSchema(fmt.Sprintf("%s.%s[%d]", path, k, i), a, allowed)...)
		}
	}
	return bad
}

// checkGeminiRequest reports what in a request body the API would refuse: a
// field it does not know, a role other than user or model, an empty
// content, a malformed declaration or schema, or function calls a turn
// does not answer one for one.
func checkGeminiRequest(body []byte) (*geminiRequest, []string) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var req geminiRequest
	if err := dec.Decode(&req); err != nil {
		return nil, []string{"the body is not a GenerateContentRequest: " + err.Error()}
	}
	if dec.More() {
		return nil, []string{"the body holds more than one JSON value"}
	}
	var bad []string
	if len(req.Contents) == 0 {
		bad = append(bad, "contents is empty")
	}
	for i, c := range req.Contents {
		if c.Role != "user" && c.Role != "model" {
			bad = append(bad, fmt.Sprintf("contents[%d]: role %q, want user or model", i, c.Role))
		}
		if len(c.Parts) == 0 {
			bad = append(bad, fmt.Sprintf("contents[%d] has no parts", i))
		}
		var calls []string
		for _, p := range c.Parts {
			if p.FunctionCall != nil {
				calls = append(calls, p.FunctionCall.Name)
			}
		}
		if len(calls) == 0 {
			continue
		}
		var answers []string
		if i+1 < len(req.Contents) {
			for _, p := range req.Contents[i+1].Parts {
				if p.FunctionResponse != nil {
					answers = append(answers, p.FunctionResponse.Name)
				}
			}
		}
		if i+1 < len(req.Contents) && !slices.Equal(calls, answers) {
			bad = append(bad, fmt.Sprintf("contents[%d] calls %v but the next content answers %v", i, calls, answers))
		}
	}
	if si := req.SystemInstruction; si != nil && (len(si.Parts) == 0 || (si.Role != "" && si.Role != "user")) {
		bad = append(bad, fmt.Sprintf("systemInstruction: role %q with %d parts", si.Role, len(si.Parts)))
	}
	for i, t := range req.Tools {
		for j, d := range t.FunctionDeclarations {
			where := fmt.Sprintf("tools[%d].functionDeclarations[%d] (%s)", i, j, d.Name)
			if !geminiFunctionName.MatchString(d.Name) {
				bad = append(bad, where+": the name breaks the API's rule")
			}
			if d.Parameters != nil && d.ParametersJSONSchema != nil {
				bad = append(bad, where+": parameters and parametersJsonSchema are mutually exclusive")
			}
			for _, s := range []struct {
				raw     json.RawMessage
				name    string
				allowed map[string]bool
			}{{d.Parameters, "parameters", geminiOpenAPIKeys}, {d.ParametersJSONSchema, "parametersJsonSchema", geminiSchemaKeys}} {
				if s.raw == nil {
					continue
				}
				var v any
				if err := json.Unmarshal(s.raw, &v); err != nil {
					bad = append(bad, fmt.Sprintf("%s.%s: %v", where, s.name, err))
					continue
				}
				bad = append(bad, checkGeminiSchema(where+"."+s.name, v, s.allowed)...)
			}
		}
	}
	return &req, bad
}

// geminiReceived is one request the server answered.
type geminiReceived struct {
	path   string
	query  string
	header http.Header
	body   []byte
	req    *geminiRequest
}

// fakeGemini is a loopback server that speaks the Gemini API's
// generateContent and streamGenerateContent (alt=sse): it checks each
// request and answers the nth with the nth reply of its script.
type fakeGemini struct {
	t      *testing.T
	srv    *httptest.Server
	model  string
	key    string
	script []*genai.GenerateContentResponse

	mu   sync.Mutex
	reqs []geminiReceived
}

func newFakeGemini(t *testing.T, modelName, key string, script ...*genai.GenerateContentResponse) *fakeGemini {
	f := &fakeGemini{t: t, model: modelName, key: key, script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// geminiAPIError answers as the API does when it refuses a request.
func geminiAPIError(w http.ResponseWriter, code int, status, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "status": status, "message": msg}})
}

func (f *fakeGemini) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		f.t.Errorf("reading a request: %v", err)
		geminiAPIError(w, http.StatusBadRequest, "INVALID_ARGUMENT", err.Error())
		return
	}
	f.mu.Lock()
	n := len(f.reqs)
	f.reqs = append(f.reqs, geminiReceived{path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), body: body})
	f.mu.Unlock()

	generate := "/v1beta/models/" + f.model + ":generateContent"
	stream := "/v1beta/models/" + f.model + ":streamGenerateContent"
	switch {
	case r.Method != http.MethodPost:
		f.t.Errorf("request %d: method %s, want POST", n, r.Method)
		geminiAPIError(w, http.StatusMethodNotAllowed, "INVALID_ARGUMENT", "POST only")
		return
	case r.URL.Path != generate && r.URL.Path != stream:
		f.t.Errorf("request %d: path %s, want %s or %s", n, r.URL.Path, generate, stream)
		geminiAPIError(w, http.StatusNotFound, "NOT_FOUND", "no such method")
		return
	case r.URL.Path == stream && r.URL.Query().Get("alt") != "sse":
		f.t.Errorf("request %d: streamGenerateContent without alt=sse (query %q)", n, r.URL.RawQuery)
		geminiAPIError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "alt=sse expected")
		return
	case r.Header.Get("x-goog-api-key") != f.key:
		f.t.Errorf("request %d: x-goog-api-key %q, want the client's key", n, r.Header.Get("x-goog-api-key"))
		geminiAPIError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "API key not valid")
		return
	case r.URL.Query().Has("key"):
		f.t.Errorf("request %d: the API key travels in the URL", n)
	case !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json"):
		f.t.Errorf("request %d: Content-Type %q, want application/json", n, r.Header.Get("Content-Type"))
	}
	req, bad := checkGeminiRequest(body)
	if len(bad) > 0 {
		f.t.Errorf("request %d would be refused by the API:\n  %s\nbody: %s", n, strings.Join(bad, "\n  "), body)
		geminiAPIError(w, http.StatusBadRequest, "INVALID_ARGUMENT", strings.Join(bad, "; "))
		return
	}
	f.mu.Lock()
	f.reqs[n].req = req
	f.mu.Unlock()
	if n >= len(f.script) {
		f.t.Errorf("request %d: the script has only %d replies", n, len(f.script))
		geminiAPIError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "no scripted reply")
		return
	}
	reply, err := json.Marshal(f.script[n])
	if err != nil {
		f.t.Errorf("encoding reply %d: %v", n, err)
		geminiAPIError(w, http.StatusInternalServerError, "INTERNAL", err.Error())
		return
	}
	if r.URL.Path == generate {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(reply)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = fmt.Fprintf(w, "data: %s\r\n\r\n", reply)
}

func (f *fakeGemini) received() []geminiReceived {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

// geminiReply is a scripted candidate of the model's, finished.
func geminiReply(parts ...*genai.Part) *genai.GenerateContentResponse {
	return &genai.GenerateContentResponse{
		Candidates: []*genai.Candidate{{
			Content:      &genai.Content{Role: genai.RoleModel, Parts: parts},
			FinishReason: genai.FinishReasonStop,
		}},
		UsageMetadata: &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 10, CandidatesTokenCount: 5, TotalTokenCount: 15},
		ModelVersion:  "fake-gemini",
	}
}

// geminiStationCode is what the code run through the Gemini path prints:
// the tool's result, serialised by the sandbox, and the names of the
// variables in its environment.
const geminiStationCode = `import json, os
from tools import get_station
s = get_station(city="Paris")
print("station:", json.dumps(s, sort_keys=True))
print("env:", json.dumps(dict(os.environ), sort_keys=True))`

// testGeminiPath runs the path once per streaming mode, named as ADK
// names the mode: none, then server-sent events.
func testGeminiPath(t *testing.T, l Line) {
	for _, mode := range []struct {
		name      string
		streaming bool
	}{{"none", false}, {"sse", true}} {
		t.Run(mode.name, func(t *testing.T) { testGeminiPathMode(t, l, mode.streaming) })
	}
}

func testGeminiPathMode(t *testing.T, l Line, streaming bool) {
	const (
		modelName = "gemini-test"
		key       = "test-key-b6f1c0de"
		prompt    = "Which weather station serves Paris?"
		answer    = "Paris is served by station LFPG."
	)
	// The key is in this process's environment too, so a sandbox that
	// inherited it would show it.
	t.Setenv("GOOGLE_API_KEY", key)

	var mu sync.Mutex
	var calls []string
	station := Tool{
		Name: "get_station", Description: "The weather station that serves a city.",
		Params: object(map[string]*jsonschema.Schema{"city": str("")}),
		Run: func(_ Call, a map[string]any) (map[string]any, error) {
			city, _ := a["city"].(string)
			mu.Lock()
			calls = append(calls, city)
			mu.Unlock()
			if city != "Paris" {
				return nil, fmt.Errorf("no station for %q", city)
			}
			return map[string]any{"city": "Paris", "icao": "LFPG", "elevation_m": 119}, nil
		},
	}

	srv := newFakeGemini(t, modelName, key,
		geminiReply(&genai.Part{FunctionCall: &genai.FunctionCall{Name: ToolName, Args: map[string]any{"code": geminiStationCode}}}),
		geminiReply(genai.NewPartFromText(answer)),
	)
	f := start(t, l, Setup{
		Tools:       []Tool{station},
		Gemini:      &GeminiModel{Name: modelName, BaseURL: srv.srv.URL, APIKey: key},
		Streaming:   streaming,
		Instruction: "You find weather stations.",
	})

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	evs, err := f.Send(ctx, "s1", genai.NewContentFromText(prompt, genai.RoleUser))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	var output map[string]any
	var final string
	for _, ev := range evs {
		if ev.Content == nil || ev.Partial {
			continue
		}
		for _, part := range ev.Content.Parts {
			if part.FunctionResponse != nil && part.FunctionResponse.Name == ToolName {
				output = part.FunctionResponse.Response
			}
			if part.Text != "" {
				final = part.Text
			}
		}
	}

	reqs := srv.received()
	if len(reqs) != 2 {
		t.Fatalf("the server received %d requests, want 2 (the prompt, then the function response)", len(reqs))
	}
	wantPath := "/v1beta/models/" + modelName + ":generateContent"
	if streaming {
		wantPath = "/v1beta/models/" + modelName + ":streamGenerateContent"
	}
	for i, rq := range reqs {
		if rq.path != wantPath {
			t.Errorf("request %d went to %s, want %s", i, rq.path, wantPath)
		}
		if rq.req == nil {
			t.Fatalf("request %d was refused", i)
		}
	}

	// The first request: the prompt, the <code-mode> block in the system
	// instruction, and execute_code declared in a form the API accepts.
	first := reqs[0].req
	var si strings.Builder
	if first.SystemInstruction != nil {
		for _, part := range first.SystemInstruction.Parts {
			si.WriteString(part.Text)
		}
	}
	for _, want := range []string{"You find weather stations.", "<code-mode>", "</code-mode>", "get_station"} {
		if !strings.Contains(si.String(), want) {
			t.Errorf("the system instruction lacks %q:\n%s", want, si.String())
		}
	}
	last := first.Contents[len(first.Contents)-1]
	if last.Role != "user" || len(last.Parts) != 1 || last.Parts[0].Text != prompt {
		t.Errorf("the first request ends with %+v, want the user's prompt", last)
	}
	var decl *geminiFunctionDeclaration
	var declared []string
	for _, tl := range first.Tools {
		for i := range tl.FunctionDeclarations {
			d := &tl.FunctionDeclarations[i]
			declared = append(declared, d.Name)
			if d.Name == ToolName {
				decl = d
			}
		}
	}
	if slices.Contains(declared, "get_station") {
		t.Errorf("get_station is declared to the model (%v); Code Mode offers it only from code", declared)
	}
	if decl == nil {
		t.Fatalf("execute_code is not declared; declared: %v", declared)
	}
	if decl.Description == "" {
		t.Error("execute_code has no description")
	}
	params := decl.ParametersJSONSchema
	if params == nil {
		params = decl.Parameters
	}
	var schema struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(params, &schema); err != nil {
		t.Fatalf("execute_code's parameters %s: %v", params, err)
	}
	if !strings.EqualFold(schema.Type, "object") || !strings.EqualFold(schema.Properties["code"].Type, "string") || !slices.Equal(schema.Required, []string{"code"}) {
		t.Errorf("execute_code's parameters %s, want an object with the string property code, required", params)
	}

	// The second request: the call as the model made it, answered by the
	// function response with what the code printed, the tool's result in it.
	second := reqs[1].req
	if len(second.Contents) < 2 {
		t.Fatalf("the second request has %d contents", len(second.Contents))
	}
	call, resp := second.Contents[len(second.Contents)-2], second.Contents[len(second.Contents)-1]
	if call.Role != "model" || len(call.Parts) != 1 || call.Parts[0].FunctionCall == nil ||
		call.Parts[0].FunctionCall.Name != ToolName || call.Parts[0].FunctionCall.Args["code"] != geminiStationCode {
		t.Errorf("the second request's model turn is %+v, want the scripted execute_code call", call)
	}
	if resp.Role != "user" || len(resp.Parts) != 1 || resp.Parts[0].FunctionResponse == nil {
		t.Fatalf("the second request ends with %+v, want one function response", resp)
	}
	fr := resp.Parts[0].FunctionResponse
	if fr.Name != ToolName {
		t.Errorf("the function response answers %q, want %s", fr.Name, ToolName)
	}
	if fr.ID != "" {
		t.Errorf("the function response carries the client-side call ID %q to the API", fr.ID)
	}
	stdout, _ := fr.Response["stdout"].(string)
	wantStation := `station: {"city": "Paris", "elevation_m": 119, "icao": "LFPG"}`
	if !strings.Contains(stdout, wantStation+"\n") {
		t.Errorf("the function response's stdout is %q, want it to hold %q", stdout, wantStation)
	}
	if e, ok := fr.Response["error"]; ok {
		t.Errorf("the function response reports an error: %v", e)
	}
	if output == nil || output["stdout"] != stdout {
		t.Errorf("the session's execute_code result %v differs from what reached the model (%q)", output, stdout)
	}
	mu.Lock()
	if !slices.Equal(calls, []string{"Paris"}) {
		t.Errorf("get_station ran for %v, want once for Paris", calls)
	}
	mu.Unlock()

	// The key travels in the header only: the sandbox's environment, its
	// output and every body sent hold no trace of it.
	var env map[string]string
	for line := range strings.SplitSeq(stdout, "\n") {
		if rest, ok := strings.CutPrefix(line, "env: "); ok {
			if err := json.Unmarshal([]byte(rest), &env); err != nil {
				t.Errorf("the sandbox's environment %q: %v", rest, err)
			}
		}
	}
	if env == nil {
		t.Error("the code did not print its environment")
	}
	for k, v := range env {
		if strings.Contains(v, key) || strings.Contains(k, key) {
			t.Errorf("the sandbox sees the API key in its environment variable %s", k)
		}
	}
	for i, rq := range reqs {
		if bytes.Contains(rq.body, []byte(key)) || strings.Contains(rq.query, key) {
			t.Errorf("request %d carries the API key outside the x-goog-api-key header", i)
		}
	}

	if final != answer {
		t.Errorf("the run ended with %q, want the scripted answer %q", final, answer)
	}
}
