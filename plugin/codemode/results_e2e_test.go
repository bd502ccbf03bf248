package codemode

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
)

type event struct {
	ID      int    `json:"id"`
	Title   string `json:"title"`
	Details string `json:"details"`
}

type eventPage struct {
	Events []event `json:"events" jsonschema:"The events, oldest first."`
}

// TestResultsAsStubsSay runs, through a real runner and sandbox, the code
// a model writes from the block: a list result indexed as the list its
// stub says (no TypeError on a {"result": [...]} wrapper), and a result
// far over Config.LargeResultBytes used as its stub says (no KeyError on
// an artifact pointer), with and without an artifact service.
func TestResultsAsStubsSay(t *testing.T) {
	listSuppliers, err := functiontool.New(functiontool.Config{Name: "list_suppliers", Description: "List the suppliers of a country."},
		func(_ agent.Context, a struct {
			Country string `json:"country"`
		}) ([]map[string]any, error) {
			// Not []supplier: ADK's functiontool checks a non-object output
			// against its schema as it is, which a slice of structs fails.
			return []map[string]any{{"name": "Acme", "country": a.Country}, {"name": "Bolt", "country": a.Country}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	listEvents, err := functiontool.New(functiontool.Config{Name: "list_events", Description: "List every event."},
		func(agent.Context, struct{}) (eventPage, error) {
			var p eventPage
			for i := range 3000 {
				p.Events = append(p.Events, event{ID: i, Title: fmt.Sprintf("event %d", i), Details: strings.Repeat("d", 40)})
			}
			return p, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	code := `from tools import list_suppliers, list_events
print([s["name"] for s in list_suppliers(country="DE")])
page = list_events()
print(len(page["events"]), page["events"][-1]["title"])`
	for _, tc := range []struct {
		name string
		svc  artifact.Service
	}{
		{"artifacts", artifact.InMemoryService()},
		{"no artifacts", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newScript().on("go", run(code), say("ok"))
			f := newFixture(t, m, fixtureConfig{cfg: Config{Tools: []tool.Tool{listSuppliers, listEvents}}, artifacts: tc.svc})
			out := outputs(f.turn(t.Context(), "s1", "go"))
			if len(out) != 1 {
				t.Fatalf("got %d results, want 1", len(out))
			}
			wantClean(t, out[0])
			if got, want := out[0]["stdout"], "['Acme', 'Bolt']\n3000 event 2999\n"; got != want {
				t.Errorf("stdout = %q, want %q", got, want)
			}
			// What the model read says what the code got.
			var si strings.Builder
			for _, p := range m.requests()[0].Config.SystemInstruction.Parts {
				si.WriteString(p.Text)
			}
			for _, want := range []string{
				"def list_suppliers(*, country: str) -> None | list[dict[str, Any]]:",
				"def list_events() -> dict[str, Any]:",
				"events: None | list[dict[str, Any]] (required) - The events, oldest first.",
				"title: str (required)",
			} {
				if !strings.Contains(si.String(), want) {
					t.Errorf("the block lacks %q:\n%s", want, si.String())
				}
			}
		})
	}
}
