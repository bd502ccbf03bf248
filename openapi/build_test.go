package openapi

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/adk-codemode/codemode/render"
)

// load loads a document or fails the test.
func load(t *testing.T, cfg Config) *API {
	t.Helper()
	api, err := Load(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return api
}

// tools returns the operations by tool name.
func tools(t *testing.T, api *API) map[string]*Op {
	t.Helper()
	out := map[string]*Op{}
	for _, o := range api.Ops() {
		out[o.Name()] = o
	}
	return out
}

func names(t *testing.T, api *API) []string {
	t.Helper()
	var out []string
	for _, o := range api.Ops() {
		out = append(out, o.Name())
	}
	return out
}

// schemaJSON returns a tool's parameter schema as a generic JSON value.
func schemaJSON(t *testing.T, tl *Op) map[string]any {
	t.Helper()
	b, err := json.Marshal(tl.Declaration().ParametersJsonSchema)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPetstoreTools(t *testing.T) {
	ts := load(t, Config{File: "testdata/petstore.yaml"})
	if ts.Name() != "pet_shop" {
		t.Errorf("Name() = %q, want pet_shop (from info.title)", ts.Name())
	}
	if diff := cmp.Diff([]string{"list_pets", "create_pet", "show_pet_by_id", "delete_pet", "place_order"}, names(t, ts)); diff != "" {
		t.Errorf("tools in document order (-want +got):\n%s", diff)
	}
	tl := tools(t, ts)
	if got := tl["delete_pet"].Description(); got != "Deprecated.\n\nRemove a pet." {
		t.Errorf("deprecated description = %q", got)
	}
	if got := tl["list_pets"].server.String(); got != "https://eu.pets.example/v1" {
		t.Errorf("server = %q, want the default of its variable", got)
	}
	// The body of createPet is a $ref to an object: its properties become
	// parameters, required as the body is.
	cp := schemaJSON(t, tl["create_pet"])
	if diff := cmp.Diff([]any{"name"}, cp["required"]); diff != "" {
		t.Errorf("create_pet required (-want +got):\n%s", diff)
	}
	props := cp["properties"].(map[string]any)
	if diff := cmp.Diff(map[string]any{"type": "string", "nullable": true}, props["tag"]); diff != "" {
		t.Errorf("create_pet tag keeps the OpenAPI 3.0 nullable (-want +got):\n%s", diff)
	}
	// A path-level parameter applies to both operations of the path.
	for _, n := range []string{"show_pet_by_id", "delete_pet"} {
		p := schemaJSON(t, tl[n])["properties"].(map[string]any)["petId"]
		if diff := cmp.Diff(map[string]any{"type": "integer", "format": "int64", "description": "The pet's id."}, p); diff != "" {
			t.Errorf("%s petId (-want +got):\n%s", n, diff)
		}
	}
	// The API key's header is the host's business, not a parameter.
	if _, ok := schemaJSON(t, tl["delete_pet"])["properties"].(map[string]any)["X-Shop-Key"]; ok {
		t.Error("the API key header is a tool parameter")
	}
}

func TestServerVariables(t *testing.T) {
	ts := load(t, Config{File: "testdata/petstore.yaml", ServerVariables: map[string]string{"region": "us"}})
	if got := tools(t, ts)["list_pets"].server.String(); got != "https://us.pets.example/v1" {
		t.Errorf("server = %q", got)
	}
	_, err := Load(t.Context(), Config{File: "testdata/petstore.yaml", ServerVariables: map[string]string{"region": "mars"}})
	if err == nil || !strings.Contains(err.Error(), `"mars" is not one of eu, us`) {
		t.Errorf("a value outside the enum: err = %v", err)
	}
	ts = load(t, Config{File: "testdata/petstore.yaml", BaseURL: "http://127.0.0.1:9/api"})
	if got := tools(t, ts)["list_pets"].server.String(); got != "http://127.0.0.1:9/api" {
		t.Errorf("BaseURL override: server = %q", got)
	}
}

func TestFilter(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"tag", Config{Tags: []string{"store"}}, []string{"place_order"}},
		{"operation ids", Config{OperationIDs: []string{"listPets", "deletePet"}}, []string{"list_pets", "delete_pet"}},
		{"path prefix", Config{PathPrefixes: []string{"/pets/"}}, []string{"show_pet_by_id", "delete_pet"}},
		{"lists combine", Config{Tags: []string{"pets"}, PathPrefixes: []string{"/pets/"}, Include: func(o Operation) bool { return !o.Deprecated }}, []string{"show_pet_by_id"}},
		{"include by method", Config{Include: func(o Operation) bool { return o.Method == "POST" }}, []string{"create_pet", "place_order"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.File = "testdata/petstore.yaml"
			if diff := cmp.Diff(c.want, names(t, load(t, c.cfg))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestNamesAndCollisions(t *testing.T) {
	long := strings.Repeat("VeryLong", 10)
	doc := `openapi: 3.0.3
info: {title: "names", version: "1"}
servers: [{url: "https://x.example"}]
paths:
  /a:
    get: {operationId: getPet, responses: {"200": {description: ok}}}
    put: {operationId: get_pet, responses: {"200": {description: ok}}}
    post: {operationId: "get-pet", responses: {"200": {description: ok}}}
  /b/{id}/HTMLPage:
    get:
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses: {"200": {description: ok}}
  /c:
    get: {operationId: "` + long + `", responses: {"200": {description: ok}}}
  /d:
    get: {operationId: "2fa/verify", responses: {"200": {description: ok}}}
`
	ts := load(t, Config{Spec: []byte(doc)})
	wantLong := cut(strings.Repeat("very_long_", 10), 64)
	want := []string{"get_pet", "get_pet_2", "get_pet_3", "get_b_id_html_page", wantLong, "op_2fa_verify"}
	if diff := cmp.Diff(want, names(t, ts)); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	wantRenamed := []Rename{
		{Pointer: "/paths/~1a/put", OperationID: "get_pet", Wanted: "get_pet", Name: "get_pet_2", Reason: "the name is taken by an earlier operation"},
		{Pointer: "/paths/~1a/post", OperationID: "get-pet", Wanted: "get_pet", Name: "get_pet_3", Reason: "the name is taken by an earlier operation"},
		{Pointer: "/paths/~1c/get", OperationID: long, Wanted: strings.TrimSuffix(strings.Repeat("very_long_", 10), "_"), Name: wantLong, Reason: "cut to 64 characters"},
	}
	if diff := cmp.Diff(wantRenamed, ts.Report().Renamed); diff != "" {
		t.Errorf("Report().Renamed (-want +got):\n%s", diff)
	}
	// The same document gives the same names every time.
	for range 3 {
		if diff := cmp.Diff(want, names(t, load(t, Config{Spec: []byte(doc)}))); diff != "" {
			t.Fatalf("names differ between loads:\n%s", diff)
		}
	}
}

func TestRefsAcrossFilesAndCycles(t *testing.T) {
	ts := load(t, Config{File: "testdata/split/main.yaml"})
	tl := tools(t, ts)
	plant := schemaJSON(t, tl["plant_tree"])
	defs := plant["$defs"].(map[string]any)
	node := defs["Node"].(map[string]any)
	// The cycle is kept as a reference to itself.
	items := node["properties"].(map[string]any)["children"].(map[string]any)["items"]
	if diff := cmp.Diff(map[string]any{"$ref": "#/$defs/Node"}, items); diff != "" {
		t.Errorf("Node.children.items (-want +got):\n%s", diff)
	}
	// leaf.yaml, reached from schemas.yaml, resolves relative to it.
	if diff := cmp.Diff(map[string]any{"$ref": "#/$defs/Leaf"}, node["properties"].(map[string]any)["leaf"]); diff != "" {
		t.Errorf("Node.leaf (-want +got):\n%s", diff)
	}
	if _, ok := defs["Leaf"]; !ok {
		t.Errorf("$defs lack Leaf: %v", defs)
	}
	if _, ok := defs["Tree"]; ok {
		t.Error("the flattened body's own schema is still in $defs")
	}
	// The renderer reads the cycle and bounds it.
	var rt []render.Tool
	for _, x := range tl {
		rt = append(rt, render.Tool{Namespace: ts.Name(), Declaration: x.Declaration()})
	}
	reg, err := render.NewRegistry(rt)
	if err != nil {
		t.Fatalf("render.NewRegistry: %v", err)
	}
	cat := reg.Catalog(render.Full)
	for _, want := range []string{"def plant_tree(", "root:", "children", "'green'", "def find_nodes(", "pattern=^[a-z0-9-]+$"} {
		if !strings.Contains(cat, want) {
			t.Errorf("catalog lacks %q:\n%s", want, cat)
		}
	}
}

func TestRefFromBytesNeedsBasePath(t *testing.T) {
	data, err := os.ReadFile("testdata/split/main.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Load(t.Context(), Config{Spec: data})
	var de *DocumentError
	if !errors.As(err, &de) || !strings.HasSuffix(de.Pointer, "/$ref") || !strings.Contains(de.Problem, "schemas.yaml#/Tree") {
		t.Fatalf("without BasePath: err = %v, want a DocumentError at the $ref", err)
	}
	abs, _ := filepath.Abs("testdata/split")
	ts := load(t, Config{Spec: data, BasePath: abs})
	if len(names(t, ts)) != 2 {
		t.Errorf("with BasePath: tools %v", names(t, ts))
	}
}

func TestInvalidDocuments(t *testing.T) {
	const head = "openapi: 3.0.3\ninfo: {title: t, version: '1'}\nservers: [{url: 'https://x.example'}]\n"
	cases := []struct {
		name, doc, pointer, problem string
	}{
		{"not a document", "hello", "", "not a readable OpenAPI document"},
		{"swagger", "swagger: '2.0'\ninfo: {title: t, version: '1'}\npaths: {}\n", "/swagger", "Swagger 2.0 is not supported"},
		{"version", "openapi: 4.0.0\ninfo: {title: t, version: '1'}\npaths: {}\n", "/openapi", `"4.0.0" is not supported`},
		{"parameter location", head + "paths:\n  /x:\n    get:\n      parameters: [{name: a, in: body, schema: {type: string}}]\n      responses: {'200': {description: ok}}\n",
			"/paths/~1x/get/parameters/0/in", `in "body"`},
		{"undeclared path parameter", head + "paths:\n  /x/{id}:\n    get:\n      responses: {'200': {description: ok}}\n",
			"/paths/~1x~1{id}/get", "declares no path parameter \"id\""},
		{"dangling ref", head + "paths:\n  /x:\n    get:\n      parameters: [{name: a, in: query, schema: {$ref: '#/components/schemas/Nope'}}]\n      responses: {'200': {description: ok}}\n",
			"/paths/~1x/get/parameters/0/schema/$ref", "does not resolve"},
		{"style", head + "paths:\n  /x:\n    get:\n      parameters: [{name: a, in: header, style: form, schema: {type: string}}]\n      responses: {'200': {description: ok}}\n",
			"/paths/~1x/get/parameters/0/style", `style "form" is not allowed for a parameter in header`},
		{"security scheme", head + "security: [{nope: []}]\npaths:\n  /x:\n    get: {responses: {'200': {description: ok}}}\n",
			"/security/0/nope", "not declared in components.securitySchemes"},
		{"relative server", "openapi: 3.0.3\ninfo: {title: t, version: '1'}\nservers: [{url: /v1}]\npaths:\n  /x:\n    get: {responses: {'200': {description: ok}}}\n",
			"/servers", "set Config.BaseURL"},
		{"undeclared server variable", "openapi: 3.0.3\ninfo: {title: t, version: '1'}\nservers: [{url: 'https://{host}/v1'}]\npaths:\n  /x:\n    get: {responses: {'200': {description: ok}}}\n",
			"/servers/0/url", "server variable {host} is not declared"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(t.Context(), Config{Spec: []byte(c.doc)})
			var de *DocumentError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want a *DocumentError", err)
			}
			if de.Pointer != c.pointer || !strings.Contains(de.Problem, c.problem) {
				t.Errorf("err = %q at %q, want %q at %q", de.Problem, de.Pointer, c.problem, c.pointer)
			}
		})
	}
}

// TestNoServerURL: an operation without an absolute server URL is the one
// document error that wraps ErrNoServerURL, which a program that sends no
// request (the codemode command) tells from the rest.
func TestNoServerURL(t *testing.T) {
	const head = "openapi: 3.0.3\ninfo: {title: t, version: '1'}\n"
	const op = "    get: {responses: {'200': {description: ok}}}\n"
	for _, c := range []struct {
		name, doc string
		wraps     bool
	}{
		{"relative", head + "servers: [{url: /v1}]\npaths:\n  /x:\n" + op, true},
		{"relative in the operation", head + "servers: [{url: 'https://x.example'}]\npaths:\n  /x:\n    get:\n      servers: [{url: /v2}]\n      responses: {'200': {description: ok}}\n", true},
		{"none", head + "paths:\n  /x:\n" + op, true},
		{"undeclared variable", head + "servers: [{url: 'https://{host}/v1'}]\npaths:\n  /x:\n" + op, false},
		{"bad path parameter", head + "servers: [{url: 'https://x.example'}]\npaths:\n  /x/{id}:\n" + op, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(t.Context(), Config{Spec: []byte(c.doc)})
			if err == nil || errors.Is(err, ErrNoServerURL) != c.wraps {
				t.Fatalf("err = %v; want an error that wraps ErrNoServerURL: %v", err, c.wraps)
			}
			if !c.wraps {
				return
			}
			if _, err := Load(t.Context(), Config{Spec: []byte(c.doc), BaseURL: "https://api.example.com"}); err != nil {
				t.Errorf("with BaseURL: %v", err)
			}
		})
	}
}

func TestSkipInvalid(t *testing.T) {
	doc := `openapi: 3.0.3
info: {title: t, version: "1"}
servers: [{url: "https://x.example"}]
paths:
  /bad/{id}:
    get: {operationId: bad, responses: {"200": {description: ok}}}
  /good:
    get: {operationId: good, responses: {"200": {description: ok}}}
`
	ts := load(t, Config{Spec: []byte(doc), SkipInvalid: true})
	if diff := cmp.Diff([]string{"good"}, names(t, ts)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	sk := ts.Report().Skipped
	if len(sk) != 1 || sk[0].Pointer != "/paths/~1bad~1{id}/get" {
		t.Errorf("Skipped = %v", sk)
	}
}

func TestUnsupportedFeaturesReported(t *testing.T) {
	doc := `openapi: 3.1.0
info: {title: t, version: "1"}
servers: [{url: "https://x.example"}]
webhooks:
  newPet:
    post: {responses: {"200": {description: ok}}}
paths:
  /subscribe:
    post:
      operationId: subscribe
      callbacks:
        onEvent:
          "{$request.body#/url}":
            post: {responses: {"200": {description: ok}}}
      responses:
        "201":
          description: ok
          links:
            unsubscribe: {operationId: unsubscribe}
        "202": {$ref: "#/components/responses/Later"}
components:
  responses:
    Later:
      description: accepted
      links:
        status: {operationId: status}
`
	ts := load(t, Config{Spec: []byte(doc)})
	var got []string
	for _, u := range ts.Report().Unsupported {
		got = append(got, u.Pointer)
	}
	want := []string{"/webhooks/newPet", "/components/responses/Later/links/status",
		"/paths/~1subscribe/post/callbacks/onEvent", "/paths/~1subscribe/post/responses/201/links/unsubscribe"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Unsupported pointers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"subscribe"}, names(t, ts)); diff != "" {
		t.Errorf("the operation with a callback still has its tool (-want +got):\n%s", diff)
	}
}

func TestBodyShapes(t *testing.T) {
	doc := `openapi: 3.1.0
info: {title: t, version: "1"}
servers: [{url: "https://x.example"}]
paths:
  /list:
    post:
      operationId: postList
      requestBody:
        content:
          application/json:
            schema: {type: array, items: {type: integer}}
      responses: {"200": {description: ok}}
  /clash/{title}:
    post:
      operationId: clash
      parameters: [{name: title, in: path, required: true, schema: {type: string}}]
      requestBody:
        required: true
        content:
          application/json:
            schema: {type: object, properties: {title: {type: string}}}
      responses: {"200": {description: ok}}
  /text:
    put:
      operationId: putText
      requestBody:
        content:
          text/plain: {}
      responses: {"200": {description: ok}}
`
	tl := tools(t, load(t, Config{Spec: []byte(doc)}))
	cases := []struct {
		tool string
		want map[string]any
	}{
		{"post_list", map[string]any{"type": "object", "properties": map[string]any{"body": map[string]any{"type": "array", "items": map[string]any{"type": "integer"}}}}},
		{"clash", map[string]any{"type": "object", "required": []any{"title", "body"}, "properties": map[string]any{
			"title": map[string]any{"type": "string"},
			"body":  map[string]any{"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}}},
		}}},
		{"put_text", map[string]any{"type": "object", "properties": map[string]any{"body": map[string]any{"type": "string"}}}},
	}
	for _, c := range cases {
		if diff := cmp.Diff(c.want, schemaJSON(t, tl[c.tool])); diff != "" {
			t.Errorf("%s schema (-want +got):\n%s", c.tool, diff)
		}
	}
}

// Toolsets load side by side, and their tools run concurrently.
func TestConcurrentLoadsAndCalls(t *testing.T) {
	rec := hubServer(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 4 {
		wg.Go(func() {
			ts, err := Load(t.Context(), Config{File: "testdata/hub.yaml", BaseURL: rec.srv.URL, Auth: map[string]Credential{"hubToken": {Token: "t"}}})
			if err != nil {
				errs <- err
				return
			}
			for range 4 {
				if _, err := ts.Call(t.Context(), "repos_get", map[string]any{"owner": "octo cat", "repo": "hello"}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := rec.count(); n != 16 {
		t.Errorf("%d requests, want 16", n)
	}
	if _, err := load(t, Config{File: "testdata/hub.yaml"}).Call(t.Context(), "nope", nil); err == nil || !strings.Contains(err.Error(), `no tool "nope"`) {
		t.Errorf("an unknown tool: err = %v", err)
	}
}
