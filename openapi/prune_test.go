package openapi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	yaml "github.com/pb33f/go-yaml"
)

// pruneDoc is a document whose component schemas are reached in every way
// the tools can reach them (Receipt and Line only from the success
// response's body), beside two that only an error response and a success
// response's header use.
const pruneDoc = `openapi: 3.1.0
info: {title: Shop, version: "1"}
servers: [{url: "https://shop.example"}]
paths:
  /orders:
    parameters:
      - $ref: "#/components/parameters/Tenant"
    post:
      operationId: createOrder
      requestBody:
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Order"}
      responses:
        "400":
          description: bad order
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Problem"}
        "200":
          description: ok
          headers:
            X-Trace: {schema: {$ref: "#/components/schemas/Trace"}}
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Receipt"}
              examples: {one: {value: {total: 1}}}
            text/plain:
              schema: {$ref: "#/components/schemas/Problem"}
components:
  parameters:
    Tenant: {name: tenant, in: header, schema: {$ref: "#/components/schemas/Tenant~1Id"}}
  schemas:
    Tenant/Id: {type: string, pattern: "^t-"}
    Order:
      type: object
      properties:
        item: {$ref: "#/components/schemas/Item"}
        payment:
          oneOf: [{$ref: "#/components/schemas/Card"}, {$ref: "#/components/schemas/Cash"}]
          discriminator: {propertyName: kind, mapping: {card: Card, cash: "#/components/schemas/Cash"}}
    Item: {type: object, properties: {sku: {type: string}, parts: {type: array, items: {$ref: "#/components/schemas/Item"}}}}
    Card: {type: object, properties: {kind: {const: card}, number: {type: string}}}
    Cash: {type: object, properties: {kind: {const: cash}}}
    Receipt: {type: object, properties: {total: {type: number}, lines: {$ref: "#/components/schemas/Line"}}}
    Line: {type: object, properties: {text: {type: string}}}
    Problem: {type: object, properties: {detail: {type: string}}}
    Trace: {type: string}
`

// emptied returns the component schemas that pruneSchemas emptied.
func emptied(t *testing.T, doc string) []string {
	t.Helper()
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &root); err != nil {
		t.Fatal(err)
	}
	pruneResponses(&root)
	pruneSchemas(&root)
	schemas := mapValue(mapValue(root.Content[0], "components"), "schemas")
	var out []string
	for i := 0; i+1 < len(schemas.Content); i += 2 {
		if len(schemas.Content[i+1].Content) == 0 {
			out = append(out, schemas.Content[i].Value)
		}
	}
	return out
}

func TestPruneSchemasKeepsWhatToolsReach(t *testing.T) {
	if got := emptied(t, pruneDoc); !slices.Equal(got, []string{"Problem", "Trace"}) {
		t.Errorf("emptied %q, want only the error response's Problem and the header's Trace", got)
	}
	// The tool still sees every schema it reaches.
	ts := load(t, Config{Spec: []byte(pruneDoc)})
	raw, err := json.Marshal(schemaJSON(t, tools(t, ts)["create_order"]))
	if err != nil {
		t.Fatal(err)
	}
	b := string(raw)
	for _, want := range []string{"^t-", "sku", "number", "cash"} {
		if !strings.Contains(b, want) {
			t.Errorf("the tool's schema lacks %q: %s", want, b)
		}
	}
	// And its declared result, from the success response only.
	raw, err = json.Marshal(tools(t, ts)["create_order"].decl.ResponseJsonSchema)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"$defs":{"Line":{"properties":{"text":{"type":"string"}},"type":"object"}},"properties":{"lines":{"$ref":"#/$defs/Line"},"total":{"type":"number"}},"type":"object"}`
	if string(raw) != want {
		t.Errorf("the declared result is %s, want %s", raw, want)
	}
}

// TestPruneResponsesKeepsSuccessSchemas keeps, of each operation's
// responses, the success response with its JSON schemas only.
func TestPruneResponsesKeepsSuccessSchemas(t *testing.T) {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(pruneDoc), &root); err != nil {
		t.Fatal(err)
	}
	pruneResponses(&root)
	resps := mapValue(mapValue(mapValue(mapValue(root.Content[0], "paths"), "/orders"), "post"), "responses")
	var got map[string]any
	if err := resps.Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"200": map[string]any{"content": map[string]any{
		"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Receipt"}},
	}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("responses (-want +got):\n%s", diff)
	}
}

func TestSuccessCode(t *testing.T) {
	for _, c := range []struct {
		keys []string
		want string
	}{
		{[]string{"404", "default", "201", "200"}, "200"},
		{[]string{"2XX", "204"}, "204"},
		{[]string{"default", "2XX", "400"}, "2XX"},
		{[]string{"400", "default"}, "default"},
		{[]string{"400", "3XX", "2ab"}, ""},
		{nil, ""},
	} {
		if got := successCode(c.keys); got != c.want {
			t.Errorf("successCode(%q) = %q, want %q", c.keys, got, c.want)
		}
	}
}

// TestPruneSchemasFollowsAliases keeps a schema that a reached YAML alias
// stands for, even when no $ref names it.
func TestPruneSchemasFollowsAliases(t *testing.T) {
	doc := strings.Replace(pruneDoc, "    Cash: {type: object, properties: {kind: {const: cash}}}",
		"    Coin: &coin {type: string, enum: [euro, cent]}\n    Cash: {type: object, properties: {kind: {const: cash}, coin: *coin}}", 1)
	got := emptied(t, doc)
	if slices.Contains(got, "Coin") || !slices.Equal(got, []string{"Problem", "Trace"}) {
		t.Errorf("emptied %q, want only Problem and Trace", got)
	}
}

func TestPruneSchemasWhenUnsure(t *testing.T) {
	for name, doc := range map[string]string{
		"external reference": strings.Replace(pruneDoc, `{$ref: "#/components/schemas/Item"}}}}`, `{$ref: "parts.yaml#/Item"}}}}`, 1),
		"unresolvable":       strings.Replace(pruneDoc, `{$ref: "#/components/schemas/Item"}`, `{$ref: "#/components/schemas/Nope"}`, 1),
		"$id":                strings.Replace(pruneDoc, `Cash: {type: object,`, `Cash: {$id: "https://shop.example/cash", type: object,`, 1),
	} {
		if got := emptied(t, doc); len(got) != 0 {
			t.Errorf("%s: emptied %q, want nothing", name, got)
		}
	}
}
