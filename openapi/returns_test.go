package openapi

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// returnsDoc declares success bodies of each kind.
const returnsDoc = `openapi: 3.0.3
info: {title: Shop, version: "1"}
servers: [{url: "https://shop.example"}]
paths:
  /items:
    get:
      operationId: listItems
      responses:
        "200":
          description: The items.
          content:
            application/json:
              schema: {type: array, items: {$ref: "#/components/schemas/Item"}}
    post:
      operationId: createItem
      responses:
        "400":
          description: A bad item.
          content:
            application/json:
              schema: {type: array, items: {type: string}}
        "201":
          description: The item as stored.
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Item"}
  /items/one:
    get:
      operationId: getItem
      responses:
        "200":
          description: The item.
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Item"}
  /items/maybe:
    get:
      operationId: findItem
      responses:
        "200":
          description: The item or null.
          content:
            application/json:
              schema: {type: object, nullable: true, properties: {sku: {type: string}}}
  /items/undeclared:
    get:
      operationId: undeclared
      responses:
        "200": {description: Something.}
  /items/fallback:
    get:
      operationId: fallback
      responses:
        default:
          description: The item.
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Item"}
components:
  schemas:
    Item: {type: object, required: [sku], properties: {sku: {type: string}}}
`

// TestResultShape checks that an operation whose declared success body is
// always an object returns that object, and every other one returns every
// body under "result", as ResultKey says; and that the declared result is
// the body's own schema.
func TestResultShape(t *testing.T) {
	var body string
	rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	})
	tl := tools(t, load(t, Config{Spec: []byte(returnsDoc), BaseURL: rec.srv.URL}))
	item := map[string]any{"sku": "a1"}
	for _, c := range []struct {
		tool, body string
		key        string
		want       map[string]any
		schemaType any // the declared result's type; nil when there is none
	}{
		{"list_items", `[{"sku":"a1"}]`, "result", map[string]any{"result": []any{item}}, "array"},
		{"get_item", `{"sku":"a1"}`, "", item, "object"},
		{"get_item", `["not", "an object"]`, "", map[string]any{"result": []any{"not", "an object"}}, "object"},
		{"undeclared", `{"sku":"a1"}`, "result", map[string]any{"result": item}, nil},
		{"find_item", `{"sku":"a1"}`, "result", map[string]any{"result": item}, "object"}, // 3.0's nullable stays as written
		{"find_item", `null`, "result", map[string]any{"result": nil}, "object"},
		{"fallback", `{"sku":"a1"}`, "", item, "object"},
		{"create_item", `{"sku":"a1"}`, "", item, "object"},
	} {
		body = c.body
		op := tl[c.tool]
		if op == nil {
			t.Fatalf("no tool %s", c.tool)
		}
		if got := op.ResultKey(); got != c.key {
			t.Errorf("%s: ResultKey() = %q, want %q", c.tool, got, c.key)
		}
		var gotType any
		if s := op.Declaration().ResponseJsonSchema; s != nil {
			raw, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			gotType = m["type"]
			if props, _ := m["properties"].(map[string]any); props["result"] != nil {
				t.Errorf("%s: the declared result wraps the body: %s", c.tool, raw)
			}
		}
		if diff := cmp.Diff(c.schemaType, gotType); diff != "" {
			t.Errorf("%s: declared result type (-want +got):\n%s", c.tool, diff)
		}
		got, err := op.Call(t.Context(), map[string]any{})
		if err != nil {
			t.Errorf("%s: %v", c.tool, err)
			continue
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", c.tool, c.body, diff)
		}
	}
}

// TestResultKeyOpenAPI31 reads the kinds OpenAPI 3.1 writes: a type list
// with null, a oneOf of objects, a 2XX range.
func TestResultKeyOpenAPI31(t *testing.T) {
	const doc = `openapi: 3.1.0
info: {title: Shop, version: "1"}
servers: [{url: "https://shop.example"}]
paths:
  /a:
    get:
      operationId: maybe
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: [object, "null"]}}}}
  /b:
    get:
      operationId: either
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {oneOf: [{type: object, properties: {a: {type: string}}}, {$ref: "#/components/schemas/B"}]}
  /c:
    get:
      operationId: ranged
      responses:
        default: {description: ok, content: {application/json: {schema: {type: object}}}}
        "2XX": {description: ok, content: {application/json: {schema: {type: string}}}}
components:
  schemas:
    B: {type: object, properties: {b: {type: string}}}
`
	tl := tools(t, load(t, Config{Spec: []byte(doc)}))
	for name, want := range map[string]string{"maybe": "result", "either": "", "ranged": "result"} {
		if got := tl[name].ResultKey(); got != want {
			t.Errorf("%s: ResultKey() = %q, want %q", name, got, want)
		}
	}
}
