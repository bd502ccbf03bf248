package codemode

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	eng "github.com/adk-codemode/codemode/internal/host/engine"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/tool"
)

// readResultArtifacts reads every tool-result artifact of session sid, by
// name, as a host would.
func readResultArtifacts(t *testing.T, svc artifact.Service, sid string) map[string][]ToolResult {
	t.Helper()
	out := map[string][]ToolResult{}
	for _, name := range listArtifactNames(t, svc, sid) {
		p := loadArtifactPart(t, svc, sid, name, 0)
		if !IsToolResultArtifact(p) {
			continue
		}
		rs, err := ReadToolResults(p)
		if err != nil {
			t.Fatalf("ReadToolResults(%s): %v", name, err)
		}
		out[name] = rs
	}
	return out
}

// TestToolResultsOneArtifactPerBlock: the results of a block's tool calls
// are saved together, in call order, as one artifact on the block's event;
// a result named by the code is saved alone; past the pending bound the
// results so far are saved as a part of their own and none is lost.
func TestToolResultsOneArtifactPerBlock(t *testing.T) {
	t.Run("one block", func(t *testing.T) {
		svc := artifact.InMemoryService()
		var mu sync.Mutex
		var hooked []map[string]int64
		cfg := Config{
			Tools: []tool.Tool{bigTool(t)},
			OnArtifactsSaved: func(_ agent.Context, delta map[string]int64) {
				mu.Lock()
				defer mu.Unlock()
				hooked = append(hooked, delta)
			},
		}
		m := newScript().on("go", run(`import threading
from tools import fetch_report
for i in range(1, 4):
    fetch_report(size=i)
fetch_report(size=9, artifact_name="kept")
th = [threading.Thread(target=fetch_report, kwargs={"size": 4 + i}) for i in range(2)]
for x in th: x.start()
for x in th: x.join()
print("ok")`), say("done"))
		f := newFixture(t, m, fixtureConfig{cfg: cfg, artifacts: svc})
		evs := f.turn(t.Context(), "s1", "go")
		wantClean(t, outputs(evs)[0])
		ev, execID := execEvent(t, evs)
		block := eng.ToolResultsArtifactName(fmt.Sprintf("codemode-%s-1", execID))
		got := readResultArtifacts(t, svc, "s1")
		if len(got) != 2 || got["kept.json"] == nil || got[block] == nil {
			t.Fatalf("tool-result artifacts %v, want kept.json and %s", slices.Sorted(maps.Keys(got)), block)
		}
		if r := got["kept.json"]; len(r) != 1 || r[0].CallID != fmt.Sprintf("codemode-%s-4", execID) {
			t.Errorf("kept.json holds %+v, want call 4 alone", r)
		}
		// Calls 5 and 6 ran in parallel; they are saved in call order
		// whichever ended first. Which size each got is up to the threads.
		var ids, bodies []string
		for _, r := range got[block] {
			ids = append(ids, r.CallID)
			var v struct{ Body string }
			if err := json.Unmarshal(r.Result, &v); err != nil || r.Tool != "fetch_report" {
				t.Errorf("result %+v: tool %q, %v", r, r.Tool, err)
			}
			bodies = append(bodies, v.Body)
		}
		var wantIDs []string
		for _, n := range []int{1, 2, 3, 5, 6} {
			wantIDs = append(wantIDs, fmt.Sprintf("codemode-%s-%d", execID, n))
		}
		if diff := cmp.Diff(wantIDs, ids); diff != "" {
			t.Errorf("call ids in %s (-want +got):\n%s", block, diff)
		}
		if len(bodies) != 5 || bodies[0] != "x" || bodies[1] != "xx" || bodies[2] != "xxx" || len(bodies[3])+len(bodies[4]) != 9 {
			t.Errorf("bodies %q, want x, xx, xxx and then 4 and 5 x in either order", bodies)
		}
		want := map[string]int64{"kept.json": 1, block: 1}
		if diff := cmp.Diff(want, ev.Actions.ArtifactDelta); diff != "" {
			t.Errorf("event's ArtifactDelta (-want +got):\n%s", diff)
		}
		mu.Lock()
		defer mu.Unlock()
		if diff := cmp.Diff([]map[string]int64{want}, hooked); diff != "" {
			t.Errorf("OnArtifactsSaved (-want +got):\n%s", diff)
		}
	})

	t.Run("early flush", func(t *testing.T) {
		// Each result below counts about 170 bytes (its JSON, tool name
		// and call id): two pass the bound, one does not.
		old := eng.MaxPendingResultBytes
		eng.MaxPendingResultBytes = 250
		t.Cleanup(func() { eng.MaxPendingResultBytes = old })
		svc := artifact.InMemoryService()
		m := newScript().on("go", run(`from tools import fetch_report
for i in range(4):
    fetch_report(size=100)
print("ok")`), say("done"))
		f := newFixture(t, m, fixtureConfig{cfg: Config{Tools: []tool.Tool{bigTool(t)}}, artifacts: svc})
		evs := f.turn(t.Context(), "s1", "go")
		wantClean(t, outputs(evs)[0])
		ev, execID := execEvent(t, evs)
		id := func(n int) string { return fmt.Sprintf("codemode-%s-%d", execID, n) }
		got := readResultArtifacts(t, svc, "s1")
		parts := map[string][]string{}
		for name, rs := range got {
			for _, r := range rs {
				parts[name] = append(parts[name], r.CallID)
			}
		}
		want := map[string][]string{
			eng.ToolResultsArtifactName(id(1)): {id(1), id(2)},
			eng.ToolResultsArtifactName(id(3)): {id(3), id(4)},
		}
		if diff := cmp.Diff(want, parts); diff != "" {
			t.Errorf("call ids by artifact (-want +got):\n%s", diff)
		}
		if len(ev.Actions.ArtifactDelta) != 2 {
			t.Errorf("event's ArtifactDelta %v, want both parts", ev.Actions.ArtifactDelta)
		}
	})
}

func TestReadToolResultsRefusesOthers(t *testing.T) {
	plain := &genai.Part{InlineData: &genai.Blob{MIMEType: "application/json", Data: []byte(`{"results":[]}`)}}
	for _, p := range []*genai.Part{nil, {Text: "x"}, plain} {
		if _, err := ReadToolResults(p); !errors.Is(err, ErrNotToolResult) {
			t.Errorf("ReadToolResults(%+v) = %v, want ErrNotToolResult", p, err)
		}
	}
	bad := &genai.Part{InlineData: &genai.Blob{MIMEType: ToolResultsMIMEType, Data: []byte(`{"results":{}}`)}}
	if _, err := ReadToolResults(bad); err == nil || errors.Is(err, ErrNotToolResult) {
		t.Errorf("ReadToolResults of a damaged artifact = %v, want a decode error", err)
	}
}
