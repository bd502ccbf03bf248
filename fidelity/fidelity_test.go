package fidelity

import (
	"strings"
	"testing"

	"google.golang.org/genai"
)

func findings(t *testing.T, d *genai.FunctionDeclaration) map[string]Finding {
	t.Helper()
	r, err := Check([]*genai.FunctionDeclaration{d})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]Finding{}
	for _, f := range r.Tools[0].Findings {
		m[f.Position()+" "+f.Keyword] = f
	}
	return m
}

func TestOutcomes(t *testing.T) {
	deep := map[string]any{"type": "string"}
	for range 70 {
		deep = map[string]any{"items": deep}
	}
	d := &genai.FunctionDeclaration{
		Name: "t",
		ParametersJsonSchema: map[string]any{
			"properties": map[string]any{
				"a/b":  map[string]any{"$ref": "#/$defs/x"},
				"mix":  map[string]any{"allOf": []any{map[string]any{"minimum": 1}}},
				"snk":  map[string]any{"max_length": 3},
				"ext":  map[string]any{"x-internal": true},
				"deep": deep,
			},
			"$defs": map[string]any{"x": map[string]any{"format": "uuid", "additionalItems": false}},
		},
		ResponseJsonSchema: map[string]any{"type": "object", "propertyOrdering": []any{"a"}},
	}
	got := findings(t, d)
	want := map[string]Outcome{
		"parameters#/properties/a~1b $ref":           Consumed,
		"parameters# $defs":                          Consumed,
		"parameters#/$defs/x format":                 Carried,
		"parameters#/$defs/x additionalItems":        Lost,
		"parameters#/properties/mix allOf":           Consumed,
		"parameters#/properties/mix/allOf/0 minimum": Carried,
		"parameters#/properties/snk max_length":      Carried,
		"parameters#/properties/ext x-internal":      Dropped,
		"response# propertyOrdering":                 Dropped,
		"response# type":                             Carried,
	}
	for k, o := range want {
		f, ok := got[k]
		if !ok {
			t.Errorf("no finding %s", k)
			continue
		}
		if f.Outcome != o {
			t.Errorf("%s: outcome %s, want %s (%s)", k, f.Outcome, o, f.Reason)
		}
		if f.Reason == "" {
			t.Errorf("%s: no reason", k)
		}
	}
	if f := got["parameters#/properties/snk max_length"]; !strings.Contains(f.Reason, "alias of maxLength") {
		t.Errorf("alias reason = %q", f.Reason)
	}
	var deepLost bool
	for k, f := range got {
		if strings.HasPrefix(k, "parameters#/properties/deep/") && f.Outcome == Lost && strings.Contains(f.Reason, "deeper") {
			deepLost = true
		}
	}
	if !deepLost {
		t.Error("a position beyond MaxDepth is not reported lost")
	}
}

func TestTotalsAndLossless(t *testing.T) {
	clean := &genai.FunctionDeclaration{Name: "a", ParametersJsonSchema: map[string]any{"type": "object", "$comment": "c"}}
	lossy := &genai.FunctionDeclaration{Name: "b", ParametersJsonSchema: map[string]any{"type": "array", "additionalItems": false}}
	r, err := Check([]*genai.FunctionDeclaration{clean})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Lossless() || r.Totals != (Totals{Carried: 1, Dropped: 1}) {
		t.Errorf("clean: lossless %v, totals %+v", r.Lossless(), r.Totals)
	}
	r, err = Check([]*genai.FunctionDeclaration{clean, lossy})
	if err != nil {
		t.Fatal(err)
	}
	if r.Lossless() || r.Totals != (Totals{Carried: 2, Dropped: 1, Lost: 1}) {
		t.Errorf("lossy: lossless %v, totals %+v", r.Lossless(), r.Totals)
	}
	lost := r.Lost()
	if len(lost) != 1 || lost[0].Tool != "b" || lost[0].Keyword != "additionalItems" {
		t.Errorf("lost = %+v", lost)
	}
	if _, err := Check([]*genai.FunctionDeclaration{{}}); err == nil {
		t.Error("a declaration without a name was accepted")
	}
}
