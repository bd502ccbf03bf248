package codemode

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
)

// httpFailure is a tool error that reports an HTTP status and a body.
type httpFailure struct {
	code int
	body any
}

func (e *httpFailure) Error() string     { return fmt.Sprintf("the server answered %d", e.code) }
func (e *httpFailure) StatusCode() int   { return e.code }
func (e *httpFailure) ResponseBody() any { return e.body }

// bareStatus reports a status but no body.
type bareStatus struct{}

func (bareStatus) Error() string   { return "rate limited" }
func (bareStatus) StatusCode() int { return 429 }

func TestStatusErrorsRaiseHTTPStatusError(t *testing.T) {
	fetch, err := functiontool.New(functiontool.Config{Name: "fetch", Description: "Fetch a thing."},
		func(_ agent.Context, a struct {
			What string `json:"what"`
		}) (map[string]any, error) {
			switch a.What {
			case "missing":
				// Wrapped: the status is found anywhere in the chain.
				return nil, fmt.Errorf("fetching %s: %w", a.What, &httpFailure{404, map[string]any{"message": "Not Found", "bytes": []byte("hi")}})
			case "busy":
				return nil, bareStatus{}
			case "odd":
				return nil, &httpFailure{code: 7}
			}
			return nil, fmt.Errorf("no status here")
		})
	if err != nil {
		t.Fatal(err)
	}
	code := `from tools import fetch, HTTPStatusError, ToolError
for what in ["missing", "busy", "odd", "plain"]:
    try:
        fetch(what=what)
    except HTTPStatusError as e:
        print(what, "HTTPStatusError", e.status_code, e.body, isinstance(e, ToolError))
    except ToolError as e:
        print(what, "ToolError", e.type)`
	m := newScript().on("go", run(code), say("ok"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{Tools: []tool.Tool{fetch}, DisableToolResultArtifacts: true}})
	out := outputs(f.turn(t.Context(), "s1", "go"))
	want := "missing HTTPStatusError 404 {'bytes': {'data': 'aGk=', 'encoding': 'base64', 'kind': 'bytes'}, 'message': 'Not Found'} True\n" +
		"busy HTTPStatusError 429 None True\n" +
		"odd ToolError ToolError\n" + // 7 is no HTTP status: a plain failure
		"plain ToolError ToolError\n"
	if diff := cmp.Diff(want, out[0]["stdout"]); diff != "" {
		t.Errorf("stdout (-want +got):\n%s\nstderr: %s", diff, out[0]["stderr"])
	}
}
