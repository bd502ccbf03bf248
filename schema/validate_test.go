package schema

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"
)

func TestValidateJSONSchema(t *testing.T) {
	v, err := CompileValidator(&genai.FunctionDeclaration{Name: "send", ParametersJsonSchema: map[string]any{
		"type": "object", "required": []any{"channel"}, "additionalProperties": false,
		"properties": map[string]any{
			"channel": map[string]any{"type": "string", "pattern": "^C"},
			"count":   map[string]any{"$ref": "#/$defs/count"},
		},
		"$defs": map[string]any{"count": map[string]any{"type": "integer", "minimum": 1}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Validate(map[string]any{"channel": "C1", "count": 2.0}); err != nil {
		t.Errorf("valid arguments rejected: %v", err)
	}
	err = v.Validate(map[string]any{"channel": "x", "count": 0, "extra": true})
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want *ValidationError", err)
	}
	var got []string
	for _, viol := range ve.Violations {
		got = append(got, viol.Path+" "+viol.Rule)
	}
	want := []string{" additionalProperties", "/channel pattern", "/count minimum"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("violations (-want +got):\n%s\n%v", diff, err)
	}
	for _, s := range []string{`tool "send"`, "arguments/count: minimum:", "arguments/channel: pattern:"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error text lacks %q:\n%v", s, err)
		}
	}
	if err := v.Validate(nil); err == nil || !strings.Contains(err.Error(), "required") {
		t.Errorf("missing required not reported: %v", err)
	}
}

func TestValidateGeminiSchema(t *testing.T) {
	v, err := CompileValidator(&genai.FunctionDeclaration{Name: "w", Parameters: &genai.Schema{
		Type: genai.TypeObject, Required: []string{"city"},
		Properties: map[string]*genai.Schema{
			"city":  {Type: genai.TypeString, MinLength: genai.Ptr[int64](2)},
			"days":  {Type: genai.TypeInteger, Nullable: genai.Ptr(true), Maximum: genai.Ptr(7.0)},
			"floor": {Type: genai.TypeInteger, Format: "enum", Enum: []string{"1", "2"}},
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Validate(map[string]any{"city": "Paris", "days": nil, "floor": 2}); err != nil {
		t.Errorf("valid arguments rejected: %v", err)
	}
	err = v.Validate(map[string]any{"city": "P", "days": 9})
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Violations) != 2 {
		t.Fatalf("err = %v, want two violations", err)
	}
}

func TestValidateSnakeCaseAndNoRemoteRefs(t *testing.T) {
	v, err := CompileValidator(&genai.FunctionDeclaration{Name: "s", ParametersJsonSchema: []byte(`{"type":"OBJECT","properties":{"q":{"type":"STRING","max_length":3}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Validate(map[string]any{"q": "toolong"}); err == nil {
		t.Error("max_length alias not enforced")
	}
	v, err = CompileValidator(&genai.FunctionDeclaration{Name: "r", ParametersJsonSchema: map[string]any{"$ref": "file:///etc/passwd"}})
	if err != nil {
		t.Fatal(err)
	}
	if u := v.Unenforced(); len(u) != 1 || u[0].Pointer != "/$ref" || !strings.Contains(u[0].Reason, "outside the declaration") {
		t.Errorf("Unenforced() = %v, want the reference outside the declaration left out, unloaded", u)
	}
}

func TestResolveCyclesTerminate(t *testing.T) {
	for _, raw := range []string{
		`{"$ref":"#"}`,
		`{"allOf":[{"$ref":"#"}]}`,
		`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`,
	} {
		d, err := Decode([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if n := d.Root(); len(n.Unresolved()) == 0 {
			t.Errorf("%s: cycle not reported", raw)
		}
	}
	// A deep chain stops at MaxDepth.
	d, _ := Decode([]byte(strings.Repeat(`{"items":`, 100) + `{}` + strings.Repeat(`}`, 100)))
	n := d.Root()
	for i := 0; i < 100; i++ {
		next, ok := n.Sub("items")
		if !ok {
			break
		}
		n = next
	}
	if !n.Truncated() {
		t.Error("depth cap not applied")
	}
}

func TestNormalise(t *testing.T) {
	d, err := Decode([]byte(`{"type":"OBJECT","any_of":[{"type":"STRING"}],"max_length":3,"exclusiveMinimum":true,"minimum":1,"description":null}`))
	if err != nil {
		t.Fatal(err)
	}
	n := d.Root()
	if got := n.Types(); !cmp.Equal(got, []string{"object"}) || n.Has("anyOf") {
		t.Errorf("Types() = %v, anyOf kept = %v; want the branch folded with the parent's type winning", got, n.Has("anyOf"))
	}
	if _, ok := n.Get("maxLength"); !ok {
		t.Error("max_length not renamed")
	}
	if _, ok := n.Get("minimum"); ok || !n.Has("exclusiveMinimum") {
		t.Error("boolean exclusiveMinimum not rewritten")
	}
	if n.Has("description") {
		t.Error("null value kept")
	}
}

// TestValidationMessageNamesTheRuleOnce: the validator's own messages for
// minimum, maxLength and the like begin with their keyword, which the error
// already names as the rule.
func TestValidationMessageNamesTheRuleOnce(t *testing.T) {
	v, err := CompileValidator(&genai.FunctionDeclaration{Name: "page", ParametersJsonSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"n":    map[string]any{"type": "integer", "minimum": 1},
			"name": map[string]any{"type": "string", "maxLength": 2},
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	err = v.Validate(map[string]any{"n": 0, "name": "abc"})
	want := "invalid arguments for tool \"page\":\n" +
		"- arguments/n: minimum: got 0, want 1\n" +
		"- arguments/name: maxLength: got 3, want 2"
	if err == nil || err.Error() != want {
		t.Errorf("error text:\n%v\nwant:\n%s", err, want)
	}
}
