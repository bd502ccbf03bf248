package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/plugin/codemode"
	"github.com/adk-codemode/codemode/toolset/openapi"
	"github.com/adk-codemode/codemode/transport"
)

// oneBlockModel answers the first request of a turn with one execute_code
// call running code, and the next with text. It keeps every request.
type oneBlockModel struct {
	code string
	mu   sync.Mutex
	reqs []*model.LLMRequest
}

func (m *oneBlockModel) Name() string { return "scripted" }

func (m *oneBlockModel) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		m.mu.Lock()
		m.reqs = append(m.reqs, req)
		m.mu.Unlock()
		answered := false
		for _, c := range req.Contents {
			if c != nil && c.Role == genai.RoleModel {
				answered = true
			}
		}
		c := genai.NewContentFromText("done", genai.RoleModel)
		if !answered {
			c = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{
				Name: codemode.ToolName, Args: map[string]any{"code": m.code},
			}}}}
		}
		yield(&model.LLMResponse{Content: c, TurnComplete: true}, nil)
	}
}

// requireJail ends the test where the jail cannot run (see
// hostcap.Missing).
func requireJail(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := (&jail.Backend{}).Open(ctx, transport.SessionConfig{})
	if errors.Is(err, jail.ErrUnsupported) {
		hostcap.Missing(t, hostcap.UserNS, err)
	}
	if err != nil {
		t.Fatalf("the jail does not start: %v", err)
	}
	_ = s.Close()
}

// runBlock runs one turn whose code is code and returns the execute_code
// result.
func runBlock(t *testing.T, m *oneBlockModel, sets ...tool.Toolset) map[string]any {
	t.Helper()
	p, err := codemode.New(codemode.Config{Toolsets: sets, DisableToolResultArtifacts: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Instruction: "Use the tools."})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{
		AppName: "openapi-e2e", Agent: a, SessionService: session.InMemoryService(),
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{p}}, AutoCreateSession: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	for ev, err := range r.Run(t.Context(), "user", "s1", genai.NewContentFromText("go", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		if ev.Content == nil {
			continue
		}
		for _, part := range ev.Content.Parts {
			if fr := part.FunctionResponse; fr != nil && fr.Name == codemode.ToolName {
				out = fr.Response
			}
		}
	}
	if out == nil {
		t.Fatal("no execute_code result")
	}
	return out
}

// The secret, split so that the code the model writes does not hold it
// whole: the sandbox's search for it must come up empty.
const (
	secretHead = "hub-token-"
	secretTail = "7f3a9c1e5b"
	secret     = secretHead + secretTail
)

func hubServer(t *testing.T) (*httptest.Server, *[]string) {
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		reply := func(code int, v any) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(v)
		}
		if r.Header.Get("Authorization") != "Bearer "+secret {
			reply(401, map[string]any{"message": "Requires authentication"})
			return
		}
		switch {
		case r.Method == "GET" && r.URL.EscapedPath() == "/repos/octo%20cat/hello":
			reply(200, map[string]any{"full_name": "octo cat/hello", "private": false})
		case r.Method == "GET" && r.URL.Path == "/repos/octo/hello/issues":
			q := r.URL.Query()
			reply(200, []any{map[string]any{"number": 1, "title": fmt.Sprintf("state=%s labels=%s per_page=%s", q.Get("state"), q.Get("labels"), q.Get("per_page"))}})
		case r.Method == "POST" && r.URL.Path == "/repos/octo/hello/issues":
			var in map[string]any
			_ = json.NewDecoder(r.Body).Decode(&in)
			reply(201, map[string]any{"number": 42, "title": in["title"], "body": in["body"], "labels": in["labels"]})
		default:
			reply(404, map[string]any{"message": "Not Found", "documentation_url": "https://docs.example/rest"})
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &auth
}

const hubCode = `import os
from tools.hub import repos_get, issues_list_for_repo, issues_create
from tools import HTTPStatusError

r = repos_get(owner="octo cat", repo="hello")
print("repo:", r["full_name"])
issues = issues_list_for_repo(owner="octo", repo="hello", state="closed", labels=["bug", "ui"], per_page=5)
print("issues:", [(i["number"], i["title"]) for i in issues])
c = issues_create(owner="octo", repo="hello", title="Broken", body="It fails", labels=["bug"])
print("created:", c["number"], c["title"], c["body"], c["labels"])
try:
    repos_get(owner="nobody", repo="nothing")
except HTTPStatusError as e:
    print("status:", e.status_code, e.body["message"])

# Look for the token everywhere the sandbox can read.
needle = "` + secretHead + `" + "` + secretTail + `"
hits = [k for k, v in os.environ.items() if needle in k or needle in v]
for proc in ("/proc/self/environ", "/proc/self/cmdline", "/proc/1/environ", "/proc/1/cmdline"):
    try:
        with open(proc, "rb") as f:
            if needle.encode() in f.read():
                hits.append(proc)
    except OSError:
        pass
import tools
roots = ["/", os.path.dirname(os.path.dirname(tools.__file__))]
seen = 0
for root in roots:
    for d, subdirs, files in os.walk(root):
        if d == "/":
            subdirs[:] = [s for s in subdirs if s not in ("proc", "sys", "dev", "usr")]
        for name in files:
            p = os.path.join(d, name)
            try:
                with open(p, "rb") as f:
                    if needle.encode() in f.read(1 << 20):
                        hits.append(p)
                seen += 1
            except OSError:
                pass
print("files searched:", seen > 0, "hits:", hits)
`

func TestHubFromPythonInTheJail(t *testing.T) {
	requireJail(t)
	srv, auth := hubServer(t)
	hub, err := openapi.New(t.Context(), openapi.Config{
		File: document(t, "hub.yaml"), BaseURL: srv.URL,
		Auth: map[string]openapi.Credential{"hubToken": {Token: secret}},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := &oneBlockModel{code: hubCode}
	out := runBlock(t, m, hub)
	want := "repo: octo cat/hello\n" +
		"issues: [(1, 'state=closed labels=bug,ui per_page=5')]\n" +
		"created: 42 Broken It fails ['bug']\n" +
		"status: 404 Not Found\n" +
		"files searched: True hits: []\n"
	if diff := cmp.Diff(want, out["stdout"]); diff != "" {
		t.Errorf("stdout (-want +got):\n%s\nstderr: %s", diff, out["stderr"])
	}
	// The token reached the server on every call ...
	if len(*auth) != 4 {
		t.Errorf("the server saw %d requests, want 4", len(*auth))
	}
	for _, a := range *auth {
		if a != "Bearer "+secret {
			t.Errorf("a request came with Authorization %q", a)
		}
	}
	// ... and never the model.
	for _, req := range m.reqs {
		b, _ := json.Marshal(req)
		if strings.Contains(string(b), secret) {
			t.Error("a model request holds the token")
		}
	}
}

const petCode = `from tools.pet_shop import create_pet, list_pets, show_pet_by_id
from tools import HTTPStatusError
print(create_pet(name="Rex", kind="dog"))
pets = list_pets(limit=2, tags=["good", "old"])
print(pets, [p["name"] for p in pets])
try:
    show_pet_by_id(petId=9)
except HTTPStatusError as e:
    print(e.status_code, e.body)
`

func TestPetstoreFromPythonInTheJail(t *testing.T) {
	requireJail(t)
	var got []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.RequestURI()+" key="+r.Header.Get("X-Shop-Key"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == "POST":
			var in map[string]any
			_ = json.NewDecoder(r.Body).Decode(&in)
			in["id"] = 1
			w.WriteHeader(201)
			_ = json.NewEncoder(w).Encode(in)
		case r.URL.Path == "/v1/pets":
			_ = json.NewEncoder(w).Encode([]any{map[string]any{"id": 1, "name": "Rex"}})
		default:
			w.WriteHeader(404)
			_ = json.NewEncoder(w).Encode(map[string]any{"code": 404, "message": "no such pet"})
		}
	}))
	t.Cleanup(srv.Close)
	pets, err := openapi.New(t.Context(), openapi.Config{File: document(t, "petstore.yaml"), BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	out := runBlock(t, &oneBlockModel{code: petCode}, pets)
	want := "{'id': 1, 'kind': 'dog', 'name': 'Rex'}\n" +
		"[{'id': 1, 'name': 'Rex'}] ['Rex']\n" + // the list itself, as list_pets's stub says, used as a list
		"404 {'code': 404, 'message': 'no such pet'}\n"
	if diff := cmp.Diff(want, out["stdout"]); diff != "" {
		t.Errorf("stdout (-want +got):\n%s\nstderr: %s", diff, out["stderr"])
	}
	wantReqs := []string{"POST /v1/pets key=", "GET /v1/pets?limit=2&tags=good,old key=", "GET /v1/pets/9 key="}
	if diff := cmp.Diff(wantReqs, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// document returns the path of one of package openapi's test documents
// (github.com/adk-codemode/codemode/openapi, in the root module), found
// from this package's directory in either ADK line's tree.
func document(t testing.TB, name string) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, "openapi", "testdata", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatalf("no openapi/testdata/%s above this package", name)
		}
		dir = up
	}
}
