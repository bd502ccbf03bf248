package openapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"

	"github.com/adk-codemode/codemode/toolset/openapi"
)

// adkTool is what ADK and Code Mode ask of each tool of the toolset.
type adkTool interface {
	tool.Tool
	Declaration() *genai.FunctionDeclaration
	ProcessRequest(ctx agent.Context, req *model.LLMRequest) error
	Run(ctx agent.Context, args any) (map[string]any, error)
	ResultKey() string
}

// runContext is the context ADK hands a tool's Run, of which these tools
// use only the context.Context part: any other method panics.
type runContext struct {
	agent.Context
	ctx context.Context
}

func (c runContext) Deadline() (time.Time, bool) { return c.ctx.Deadline() }
func (c runContext) Done() <-chan struct{}       { return c.ctx.Done() }
func (c runContext) Err() error                  { return c.ctx.Err() }
func (c runContext) Value(key any) any           { return c.ctx.Value(key) }

const listDoc = `openapi: 3.1.0
info: {title: Shop, version: "1"}
paths:
  /items:
    get:
      operationId: listItems
      responses:
        "200":
          description: The items.
          content:
            application/json:
              schema: {type: array, items: {type: string}}
  /items/{id}:
    get:
      operationId: getItem
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
      responses:
        "200":
          description: The item.
          content:
            application/json:
              schema: {type: object}
`

// The toolset's tools are ADK tools over the document's operations: each
// declares itself, packs itself into a model request once, runs its
// operation and says where its body is.
func TestTools(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/items" {
			_, _ = w.Write([]byte(`["lamp"]`))
			return
		}
		_, _ = w.Write([]byte(`{"id": 7}`))
	}))
	defer srv.Close()
	ts, err := openapi.New(t.Context(), openapi.Config{Spec: []byte(listDoc), BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if ts.Name() != "shop" {
		t.Errorf("Name = %q, want shop", ts.Name())
	}
	list, err := ts.Tools(nil)
	if err != nil || len(list) != 2 {
		t.Fatalf("Tools = %v, %v", list, err)
	}
	tools := map[string]adkTool{}
	for _, tl := range list {
		at, ok := tl.(adkTool)
		if !ok {
			t.Fatalf("%s is a %T, which lacks what ADK and Code Mode call", tl.Name(), tl)
		}
		if at.IsLongRunning() {
			t.Errorf("%s is long-running", tl.Name())
		}
		tools[tl.Name()] = at
	}
	for name, want := range map[string]struct{ key, body string }{
		"list_items": {"result", `{"result":["lamp"]}`},
		"get_item":   {"", `{"id":7}`},
	} {
		at := tools[name]
		if at == nil {
			t.Fatalf("no tool %s in %v", name, list)
		}
		if at.ResultKey() != want.key {
			t.Errorf("%s: ResultKey = %q, want %q", name, at.ResultKey(), want.key)
		}
		got, err := at.Run(runContext{ctx: t.Context()}, map[string]any{"id": 7})
		if err != nil {
			t.Fatalf("%s: Run: %v", name, err)
		}
		if b, _ := json.Marshal(got); string(b) != want.body {
			t.Errorf("%s: Run = %s, want %s", name, b, want.body)
		}
	}
	if got, err := ts.Call(t.Context(), "get_item", map[string]any{"id": 7}); err != nil || got["id"] == nil {
		t.Errorf("Call = %v, %v", got, err)
	}

	req := &model.LLMRequest{}
	for _, n := range []string{"list_items", "get_item"} {
		if err := tools[n].ProcessRequest(nil, req); err != nil {
			t.Fatal(err)
		}
	}
	decls := req.Config.Tools[0].FunctionDeclarations
	if len(decls) != 2 || decls[0].Name != "list_items" || decls[1].Name != "get_item" || req.Tools["get_item"] != tools["get_item"] {
		t.Errorf("the request holds %v and %v", decls, req.Tools)
	}
	if err := tools["get_item"].ProcessRequest(nil, req); err == nil {
		t.Error("a tool was packed into the same request twice")
	}
}

// New's errors and Report are the document's, as package openapi (the
// one without ADK) gives them.
func TestNewErrors(t *testing.T) {
	_, err := openapi.New(t.Context(), openapi.Config{Spec: []byte(listDoc)})
	var de *openapi.DocumentError
	if !errors.As(err, &de) || !errors.Is(err, openapi.ErrNoServerURL) {
		t.Errorf("a document without a server: err = %v, want a *DocumentError wrapping ErrNoServerURL", err)
	}
	ts, err := openapi.New(t.Context(), openapi.Config{Spec: []byte(listDoc), BaseURL: "http://127.0.0.1:1", SkipInvalid: true, OperationIDs: []string{"getItem"}})
	if err != nil {
		t.Fatal(err)
	}
	if list, _ := ts.Tools(nil); len(list) != 1 || len(ts.Report().Renamed) != 0 {
		t.Errorf("Tools = %v, Report = %+v", list, ts.Report())
	}
}
