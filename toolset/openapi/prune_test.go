package openapi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	yaml "github.com/pb33f/go-yaml"
)

// pruneDoc is a document whose component schemas are reached in every way
// the tools can reach them, beside two that only responses use.
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
        "200":
          description: ok
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Receipt"}
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
	if got := emptied(t, pruneDoc); !slices.Equal(got, []string{"Receipt", "Line"}) {
		t.Errorf("emptied %q, want only the response's Receipt and Line", got)
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
}

// TestPruneSchemasFollowsAliases keeps a schema that a reached YAML alias
// stands for, even when no $ref names it.
func TestPruneSchemasFollowsAliases(t *testing.T) {
	doc := strings.Replace(pruneDoc, "    Cash: {type: object, properties: {kind: {const: cash}}}",
		"    Coin: &coin {type: string, enum: [euro, cent]}\n    Cash: {type: object, properties: {kind: {const: cash}, coin: *coin}}", 1)
	got := emptied(t, doc)
	if slices.Contains(got, "Coin") || !slices.Equal(got, []string{"Receipt", "Line"}) {
		t.Errorf("emptied %q, want only Receipt and Line", got)
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
