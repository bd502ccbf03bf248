package render

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/adk-codemode/codemode/schema"
)

func oneTool(t *testing.T, params any) *Registry {
	t.Helper()
	reg, err := NewRegistry([]Tool{{Declaration: &genai.FunctionDeclaration{Name: "t", ParametersJsonSchema: params}}})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// keywordSamples gives each rendered 2020-12 keyword a schema of the
// parameter p that uses it; the test removes the keyword and expects the
// stub to change, so a rendered keyword can never be dropped silently.
var keywordSamples = map[string]map[string]any{
	"prefixItems":           {"type": "array", "prefixItems": []any{map[string]any{"type": "string"}}},
	"items":                 {"type": "array", "items": map[string]any{"type": "integer"}},
	"contains":              {"type": "array", "contains": map[string]any{"type": "integer"}},
	"additionalProperties":  {"type": "object", "additionalProperties": false},
	"properties":            {"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string"}}},
	"patternProperties":     {"type": "object", "patternProperties": map[string]any{"^a": map[string]any{}}},
	"dependentSchemas":      {"type": "object", "dependentSchemas": map[string]any{"a": map[string]any{"required": []any{"b"}}}},
	"propertyNames":         {"type": "object", "propertyNames": map[string]any{"maxLength": 3}},
	"if":                    {"if": map[string]any{"type": "string"}, "then": map[string]any{"minLength": 1}, "else": map[string]any{"minimum": 0}},
	"then":                  {"if": map[string]any{"type": "string"}, "then": map[string]any{"minLength": 1}, "else": map[string]any{"minimum": 0}},
	"else":                  {"if": map[string]any{"type": "string"}, "then": map[string]any{"minLength": 1}, "else": map[string]any{"minimum": 0}},
	"anyOf":                 {"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}},
	"oneOf":                 {"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}},
	"not":                   {"not": map[string]any{"type": "string"}},
	"unevaluatedItems":      {"type": "array", "unevaluatedItems": false},
	"unevaluatedProperties": {"type": "object", "unevaluatedProperties": false},
	"type":                  {"type": "string"},
	"const":                 {"const": "x"},
	"enum":                  {"enum": []any{"a", "b"}},
	"multipleOf":            {"multipleOf": 2},
	"maximum":               {"maximum": 2},
	"exclusiveMaximum":      {"exclusiveMaximum": 2},
	"minimum":               {"minimum": 2},
	"exclusiveMinimum":      {"exclusiveMinimum": 2},
	"maxLength":             {"maxLength": 2},
	"minLength":             {"minLength": 2},
	"pattern":               {"pattern": "^a"},
	"maxItems":              {"maxItems": 2},
	"minItems":              {"minItems": 2},
	"uniqueItems":           {"uniqueItems": true},
	"maxContains":           {"maxContains": 2},
	"minContains":           {"minContains": 2},
	"maxProperties":         {"maxProperties": 2},
	"minProperties":         {"minProperties": 2},
	"required":              {"type": "object", "properties": map[string]any{"x": map[string]any{}}, "required": []any{"x"}},
	"dependentRequired":     {"dependentRequired": map[string]any{"a": []any{"b"}}},
	"title":                 {"title": "Some title"},
	"description":           {"description": "Some text"},
	"default":               {"default": 3},
	"deprecated":            {"deprecated": true},
	"readOnly":              {"readOnly": true},
	"writeOnly":             {"writeOnly": true},
	"examples":              {"examples": []any{1}},
	"format":                {"format": "date"},
	"contentEncoding":       {"contentEncoding": "base64"},
	"contentMediaType":      {"contentMediaType": "text/plain"},
	"contentSchema":         {"contentMediaType": "application/json", "contentSchema": map[string]any{"type": "object"}},
	"nullable":              {"type": "string", "nullable": true},
	"example":               {"example": "x"},
	"discriminator": {"discriminator": map[string]any{"propertyName": "k"}, "oneOf": []any{
		map[string]any{"properties": map[string]any{"k": map[string]any{"const": "a"}, "x": map[string]any{}}},
		map[string]any{"properties": map[string]any{"k": map[string]any{"const": "b"}, "y": map[string]any{}}},
	}},
}

func stubOf(t *testing.T, p map[string]any) string {
	t.Helper()
	reg := oneTool(t, map[string]any{"type": "object", "properties": map[string]any{"p": p}, "required": []any{"p"}})
	for _, f := range reg.Stubs() {
		if f.Path == "tools/t.py" {
			return f.Content
		}
	}
	t.Fatal("no stub tools/t.py")
	return ""
}

func TestEveryRenderedKeywordReachesTheStub(t *testing.T) {
	for _, k := range schema.Keywords() {
		if k.Class != schema.Rendered {
			continue
		}
		sample, ok := keywordSamples[k.Name]
		if !ok {
			t.Errorf("no sample for rendered keyword %q", k.Name)
			continue
		}
		with := stubOf(t, sample)
		without := map[string]any{}
		for key, v := range sample {
			if key != k.Name {
				without[key] = v
			}
		}
		if with == stubOf(t, without) {
			t.Errorf("keyword %q leaves no trace in the stub:\n%s", k.Name, with)
		}
	}
}

func TestStubsAreByteStable(t *testing.T) {
	params := map[string]any{"type": "object", "properties": map[string]any{
		"a": map[string]any{"type": "object", "properties": map[string]any{"z": map[string]any{}, "y": map[string]any{}, "x": map[string]any{}}},
		"b": map[string]any{"enum": []any{"q", "p"}}, "c": map[string]any{"dependentRequired": map[string]any{"m": []any{"n"}, "k": []any{"l"}}},
	}}
	first := oneTool(t, params).Catalog(Full)
	for range 20 {
		if got := oneTool(t, params).Catalog(Full); got != first {
			t.Fatalf("catalog changed between renders:\n%s", cmp.Diff(first, got))
		}
	}
}

func TestLookup(t *testing.T) {
	reg, err := NewRegistry([]Tool{
		{Namespace: "a", Declaration: &genai.FunctionDeclaration{Name: "find"}},
		{Namespace: "b", Declaration: &genai.FunctionDeclaration{Name: "find"}},
		{Namespace: "Slack", Declaration: &genai.FunctionDeclaration{Name: "Send-Message"}},
		{Declaration: &genai.FunctionDeclaration{Name: "get-weather"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, wantNS, wantRaw string
		ok                    bool
	}{
		{"a.find", "a", "find", true},
		{"b.find", "b", "find", true},
		{"find", "", "", false}, // shared raw name does not resolve
		{"slack.send_message", "Slack", "Send-Message", true},
		{"Send-Message", "Slack", "Send-Message", true},
		{"get_weather", "", "get-weather", true},
		{"get-weather", "", "get-weather", true},
		{"nope", "", "", false},
	} {
		e, ok := reg.Lookup(tc.name)
		if ok != tc.ok || e.Namespace != tc.wantNS || e.Name != tc.wantRaw {
			t.Errorf("Lookup(%q) = %+v, %v; want namespace %q raw %q, %v", tc.name, e, ok, tc.wantNS, tc.wantRaw, tc.ok)
		}
	}
	if got, want := reg.Namespaces(), []string{"a", "b", "slack"}; !cmp.Equal(got, want) {
		t.Errorf("Namespaces() = %v, want %v", got, want)
	}
}

func TestRegistryErrors(t *testing.T) {
	_, err := NewRegistry([]Tool{{}})
	if !errors.Is(err, ErrInvalidTool) {
		t.Errorf("nil declaration: err = %v, want ErrInvalidTool", err)
	}
	_, err = NewRegistry([]Tool{{Declaration: &genai.FunctionDeclaration{}}})
	if !errors.Is(err, ErrInvalidTool) {
		t.Errorf("empty name: err = %v, want ErrInvalidTool", err)
	}
	_, err = NewRegistry([]Tool{{Declaration: &genai.FunctionDeclaration{Name: "x", ParametersJsonSchema: func() {}}}})
	if !errors.Is(err, schema.ErrNotJSON) {
		t.Errorf("unmarshalable schema: err = %v, want ErrNotJSON", err)
	}
	_, err = NewRegistry([]Tool{{Namespace: "a-b", Declaration: &genai.FunctionDeclaration{Name: "x"}}, {Namespace: "a_b", Declaration: &genai.FunctionDeclaration{Name: "y"}}})
	var ce *CollisionError
	if !errors.As(err, &ce) || ce.Kind != "namespace" {
		t.Errorf("namespace collision: err = %v", err)
	}
}

func TestTypedParametersMatchRaw(t *testing.T) {
	typed := &genai.Schema{Type: genai.TypeObject, Required: []string{"q"}, Properties: map[string]*genai.Schema{
		"q": {Type: genai.TypeString, MaxLength: genai.Ptr[int64](5)},
		"n": {Type: genai.TypeInteger, Nullable: genai.Ptr(true)},
	}}
	a, err := NewRegistry([]Tool{{Declaration: &genai.FunctionDeclaration{Name: "t", Parameters: typed}}})
	if err != nil {
		t.Fatal(err)
	}
	raw := json.RawMessage(`{"type":"OBJECT","required":["q"],"properties":{"q":{"type":"STRING","max_length":5},"n":{"type":"INTEGER","nullable":true}}}`)
	b := oneTool(t, raw)
	if diff := cmp.Diff(a.Catalog(Full), b.Catalog(Full)); diff != "" {
		t.Errorf("genai.Schema and raw Gemini JSON render differently (-typed +raw):\n%s", diff)
	}
	if !strings.Contains(a.Catalog(Full), "n: int | None = ...") {
		t.Errorf("nullable integer not rendered as int | None:\n%s", a.Catalog(Full))
	}
}

func TestBlockCached(t *testing.T) {
	reg := oneTool(t, map[string]any{"type": "object"})
	env := Environment{PythonVersion: "3.12", Packages: map[string]map[string]string{"yaml": {"PyYAML": "6"}}}
	a := reg.Block(env, 0)
	b := reg.Block(env, DefaultBudget)
	if a != b {
		t.Error("budget 0 does not mean DefaultBudget")
	}
	if !strings.Contains(a, "  <python-version>3.12</python-version>\n") || !strings.Contains(a, "yaml: PyYAML 6\n") {
		t.Errorf("block lacks environment:\n%s", a)
	}
	other := reg.Block(Environment{}, DefaultBudget)
	if strings.Contains(other, "python-version") || strings.Contains(other, "installed-packages") {
		t.Errorf("empty environment still rendered:\n%s", other)
	}
}

func TestDescriptionVariants(t *testing.T) {
	appended := Description(DescriptionConfig{BlockAppended: true, ArtifactTools: true, Timeout: 60 * time.Second, ToolTimeout: 20 * time.Second, BlocksPerTurn: 12})
	plain := Description(DescriptionConfig{})
	for _, want := range []string{"<code-mode>", "save_artifact", "60 seconds", "ToolError", "HTTPStatusError",
		"variables and files are kept for the next call", "CodeTimeout", "20 seconds", "TimeoutError", "at most 12 calls"} {
		if !strings.Contains(appended, want) {
			t.Errorf("appended variant lacks %q:\n%s", want, appended)
		}
	}
	for _, bad := range []string{"<code-mode>", "save_artifact", "seconds", "at most"} {
		if strings.Contains(plain, bad) {
			t.Errorf("plain variant mentions %q:\n%s", bad, plain)
		}
	}
	if !strings.Contains(plain, "docstrings") {
		t.Errorf("plain variant does not say how to discover tools:\n%s", plain)
	}
	if strings.Contains(plain, "search(") {
		t.Errorf("plain variant without a discovery module mentions search:\n%s", plain)
	}
	durable := Description(DescriptionConfig{Durable: true})
	if !strings.Contains(durable, "same tool calls with the same arguments") || strings.Contains(plain, "same tool calls") {
		t.Errorf("what resuming requires of code is told only with Durable:\n%s\n%s", durable, plain)
	}
	found := Description(DescriptionConfig{DiscoveryModule: "tools._discovery"})
	for _, want := range []string{"search(query)", "describe(name)", "from tools._discovery import search, describe", "docstrings"} {
		if !strings.Contains(found, want) {
			t.Errorf("variant with discovery lacks %q:\n%s", want, found)
		}
	}
	withBlock := Description(DescriptionConfig{BlockAppended: true, DiscoveryModule: "tools"})
	if withBlock != Description(DescriptionConfig{BlockAppended: true}) {
		t.Errorf("with the block appended, the discovery module changed the description:\n%s", withBlock)
	}
}

func TestPythonRepr(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{`1`, "1"}, {`-0`, "0"}, {`1.0`, "1.0"}, {`1e16`, "1e+16"}, {`1e15`, "1000000000000000.0"},
		{`0.0001`, "0.0001"}, {`0.00001`, "1e-05"}, {`123456789012345678901234567890`, "123456789012345678901234567890"},
		{`1e999`, "float('inf')"}, {`"it's"`, `"it's"`}, {`"a'\""`, `'a\'"'`}, {`"\u0001\n"`, `'\x01\n'`},
		{`[true,null,{"b":1,"a":"x"}]`, `[True, None, {'a': 'x', 'b': 1}]`},
	} {
		v, err := schema.Decode(json.RawMessage(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := repr(v.Raw()); got != tc.want {
			t.Errorf("repr(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestSuffixRulesReadTheirKeyword checks that each of suffixRules gives
// parts only to a position holding its keyword: a position holding one
// other keyword, whatever its value, gets nothing from it. So a position
// holding none of the rules' keywords, for which scanSuffix marks no rule,
// loses no parts when otherSuffixParts is skipped. It also checks that
// scanSuffix marks the rule of each keyword and no other.
func TestSuffixRulesReadTheirKeyword(t *testing.T) {
	values := []any{true, false, json.Number("1"), "x", []any{"a"}, []any{map[string]any{"type": "string"}},
		map[string]any{"type": "string"}, map[string]any{"a": map[string]any{"type": "string"}}}
	names := map[string]bool{"description": true, "properties": true, "x-extra": true}
	for _, k := range schema.Keywords() {
		names[k.Name] = true
	}
	for _, k := range suffixKeys {
		names[k] = true
	}
	rule := map[string]int{}
	for i, r := range suffixRules {
		names[r.keyword] = true
		rule[r.keyword] = i
	}
	for name := range names {
		var want uint32
		if i, ok := rule[name]; ok {
			want = 1 << i
		}
		for _, v := range values {
			doc, err := schema.Decode(map[string]any{name: v})
			if err != nil {
				t.Fatal(err)
			}
			n := doc.Root()
			if _, got := scanSuffix(n); got != want {
				t.Fatalf("scanSuffix marks rules %b for %s=%v, want %b", got, name, v, want)
			}
			s := suffixScope{d: &describer{budget: maxLines}, n: n, nested: true}
			for _, r := range suffixRules {
				if r.keyword == name {
					continue
				}
				if got := r.parts(s, nil); len(got) > 0 {
					t.Errorf("%s=%#v gives %q from the rule of %s", name, v, got, r.keyword)
				}
			}
		}
	}
}

// TestBlockFitsEveryBudget checks the tier choice at many budgets: the
// block fits unless it is the pointer tier, its size is judged exactly, a
// larger budget never shows less, and the same inputs give the same bytes.
func TestBlockFitsEveryBudget(t *testing.T) {
	reg, err := NewRegistry(realisticTools(60))
	if err != nil {
		t.Fatal(err)
	}
	for _, discovery := range []bool{false, true} {
		env := Environment{PythonVersion: "3.12.4", Discovery: discovery}
		prev := 0
		sawMixed := false
		for budget := 500; budget <= 120000; budget += 97 {
			block := reg.Block(env, budget)
			n := utf8.RuneCountInString(block)
			pointer := !strings.Contains(block, "\n# tools")
			if !pointer && n > budget {
				t.Errorf("discovery=%v budget %d: block of %d runes does not fit", discovery, budget, n)
			}
			if n < prev && !pointer {
				t.Errorf("discovery=%v budget %d: block shrank from %d to %d runes", discovery, budget, prev, n)
			}
			if !pointer {
				prev = n
			}
			full := strings.Count(block, "    Args:")
			if full > 0 && full < 60 {
				sawMixed = true
			}
			if hint := strings.Contains(block, "search(query)"); hint != (discovery && !pointer && full < 60) {
				t.Errorf("discovery=%v budget %d: hint shown = %v with %d full docstrings", discovery, budget, hint, full)
			}
			if again := reg.Block(env, budget); again != block {
				t.Fatalf("budget %d: block not byte-stable", budget)
			}
			// The size is judged exactly: a budget of the block's own
			// length gives the same block.
			if !pointer && reg.Block(env, n) != block {
				t.Errorf("discovery=%v budget %d: a budget of exactly %d runes gives another block", discovery, budget, n)
			}
		}
		if !sawMixed {
			t.Errorf("discovery=%v: no budget gave a mix of full and reduced sections", discovery)
		}
	}
}

// TestInvalidSharedParameter: a shared parameter needs a name of its own
// and a description.
func TestInvalidSharedParameter(t *testing.T) {
	for _, shared := range [][]SharedParameter{
		{{Name: "", Description: "x"}},
		{{Name: "a", Description: " "}},
		{{Name: "a", Description: "x"}, {Name: "a", Description: "y"}},
	} {
		if _, err := NewRegistry(nil, shared...); !errors.Is(err, ErrInvalidSharedParameter) {
			t.Errorf("%v: %v, want ErrInvalidSharedParameter", shared, err)
		}
	}
}
