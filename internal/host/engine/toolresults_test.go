package engine

import (
	"errors"
	"strings"
	"testing"
)

// TestResultsSave: results wait to be saved together, in call order; a
// large one and a named one are saved alone at once; past the pending
// bound what waits is saved; after Flush a result goes alone; each
// artifact reads back.
func TestResultsSave(t *testing.T) {
	old := MaxPendingResultBytes
	MaxPendingResultBytes = 200
	t.Cleanup(func() { MaxPendingResultBytes = old })
	art := &memArtifacts{enabled: true}
	var r Results
	ctx := t.Context()
	if v := r.Save(ctx, art, 50, "small", "codemode-c-2", ResultNaming{}, "b"); v != "b" {
		t.Errorf("the code got %v", v)
	}
	r.Save(ctx, art, 50, "small", "codemode-c-1", ResultNaming{}, "a")
	r.Save(ctx, art, 50, "big", "codemode-c-3", ResultNaming{}, strings.Repeat("x", 60))
	r.Save(ctx, art, 50, "named", "codemode-c-4", ResultNaming{Name: "total", Description: "the sum"}, 42)
	if len(art.saved) != 2 || art.saved["codemode-tool-big-c-3.json"] == nil || art.saved["total.json"] == nil {
		t.Fatalf("saved at once: %v; want the large and the named result alone", keys(art.saved))
	}
	rs, err := ReadToolResults(art.saved["total.json"])
	if err != nil || len(rs) != 1 || rs[0].Name != "total" || rs[0].Description != "the sum" || string(rs[0].Result) != "42" {
		t.Errorf("the named result reads back as %+v, %v", rs, err)
	}
	r.Flush(ctx, art)
	rs, err = ReadToolResults(art.saved["codemode-tool-results-c-1.json"])
	if err != nil || len(rs) != 2 || rs[0].CallID != "codemode-c-1" || rs[1].CallID != "codemode-c-2" {
		t.Fatalf("the block's results read back as %+v, %v; want both, in call order", rs, err)
	}
	r.Save(ctx, art, 50, "late", "codemode-c-5", ResultNaming{}, "z")
	if art.saved["codemode-tool-late-c-5.json"] == nil {
		t.Errorf("a result after Flush was not saved alone: %v", keys(art.saved))
	}

	var bound Results
	bounded := &memArtifacts{enabled: true}
	for i := range 10 {
		bound.Save(ctx, bounded, -1, "t", "codemode-d-"+string(rune('0'+i)), ResultNaming{}, strings.Repeat("y", 40))
	}
	if len(bounded.saved) == 0 {
		t.Error("results past the pending bound were not saved before the end of the block")
	}

	var none Results
	off := &memArtifacts{}
	none.Save(ctx, off, 0, "t", "c", ResultNaming{Name: "n"}, 1)
	none.Flush(ctx, off)
	if len(off.saved) != 0 {
		t.Errorf("saved without an artifact service: %v", keys(off.saved))
	}
	if _, err := ReadToolResults(nil); !errors.Is(err, ErrNotToolResult) {
		t.Errorf("ReadToolResults(nil) = %v", err)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
