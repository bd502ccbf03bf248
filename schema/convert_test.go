package schema

import (
	"encoding/json"
	"math"
	"testing"
)

// TestPlainJSONNumbers checks that numbers become the json.Number that
// encoding/json prints, through the cache of small integers and around it.
func TestPlainJSONNumbers(t *testing.T) {
	for _, v := range []any{
		0, 1, 50, 1023, 1024, -1, math.MaxInt64, int64(7), int64(-3),
		0.0, math.Copysign(0, -1), 1.0, 5.0, 1023.0, 1024.0, 2.5, -1.0, 1e21, 1e-7, 123456789.0,
	} {
		got, ok := plainJSON(v, 0)
		if !ok {
			t.Errorf("plainJSON(%v) failed", v)
			continue
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if n, isNum := got.(json.Number); !isNum || string(n) != string(want) {
			t.Errorf("plainJSON(%T %v) = %#v, want json.Number(%s)", v, v, got, want)
		}
	}
}

// TestPlainJSONShares checks that values with nothing to convert are
// shared and those with a number are copied, leaving the input unchanged.
func TestPlainJSONShares(t *testing.T) {
	plain := map[string]any{"type": "string", "enum": []any{"a", "b"}}
	got, _ := plainJSON(plain, 0)
	if m, ok := got.(map[string]any); !ok || len(m) != len(plain) {
		t.Fatalf("plainJSON(%v) = %v", plain, got)
	} else {
		m["probe"] = true
		if _, shared := plain["probe"]; !shared {
			t.Error("an object with nothing to convert was copied")
		}
		delete(plain, "probe")
	}
	withNumber := map[string]any{"type": "integer", "enum": []any{"x", 3}, "nested": map[string]any{"maximum": 9.0}}
	got, _ = plainJSON(withNumber, 0)
	m := got.(map[string]any)
	if m["enum"].([]any)[1] != json.Number("3") || m["nested"].(map[string]any)["maximum"] != json.Number("9") {
		t.Errorf("numbers not converted: %#v", m)
	}
	if withNumber["enum"].([]any)[1] != 3 || withNumber["nested"].(map[string]any)["maximum"] != 9.0 {
		t.Errorf("the input was changed: %#v", withNumber)
	}
}
