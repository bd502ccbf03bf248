package evidence_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/evidence"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/transport"
)

// squaresShape is a shape of a user's own: the sum of the squares of 1 to
// 10, one call per number. Direct, the model asks for the ten squares at
// once and adds them; through code, one block does it all.
func squaresShape() evidence.Shape {
	return evidence.NewShape("squares", "sum of ten squares", evidence.Code, func(context.Context) (*evidence.Task, error) {
		var calls atomic.Int64
		square, err := functiontool.New(functiontool.Config{Name: "square", Description: "The square of n."},
			func(_ agent.Context, a struct {
				N int `json:"n"`
			}) (map[string]any, error) {
				calls.Add(1)
				return map[string]any{"square": a.N * a.N}, nil
			})
		if err != nil {
			return nil, err
		}
		return &evidence.Task{
			Prompt: "What is the sum of the squares of 1 to 10?",
			Tools:  []tool.Tool{square},
			Direct: []string{"square"},
			Answer: "385",
			Calls:  &calls,
			DirectPolicy: func() evidence.Policy {
				return func(obs evidence.Observation) (evidence.Turn, error) {
					if obs.Step == 0 {
						var t evidence.Turn
						for n := 1; n <= 10; n++ {
							t.Calls = append(t.Calls, &genai.FunctionCall{Name: "square", Args: map[string]any{"n": n}})
						}
						return t, nil
					}
					sum := 0.0
					for _, r := range obs.Responses {
						v, _ := r.Response["square"].(float64)
						sum += v
					}
					return evidence.Turn{Answer: fmt.Sprint(sum)}, nil
				}
			},
			CodePolicy: func() evidence.Policy {
				return func(obs evidence.Observation) (evidence.Turn, error) {
					if obs.Step == 0 {
						return evidence.Turn{Calls: []*genai.FunctionCall{{Name: "execute_code", Args: map[string]any{
							"code": "from tools import square\nprint(sum(square(n=n)['square'] for n in range(1, 11)))"}}}}, nil
					}
					out, _ := obs.Responses[0].Response["stdout"].(string)
					return evidence.Turn{Answer: strings.TrimSpace(out)}, nil
				}
			},
		}, nil
	})
}

// TestCustomShape runs a shape of a user's own under the three conditions,
// its answer checked, as the built-in ones are.
func TestCustomShape(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	b := &jail.Backend{}
	t.Cleanup(func() { _ = b.Close() })
	s, err := b.Open(ctx, transport.SessionConfig{})
	if errors.Is(err, jail.ErrUnsupported) {
		hostcap.Missing(t, hostcap.UserNS, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	rep, err := evidence.Run(t.Context(), evidence.Options{Extra: []evidence.Shape{squaresShape()}, Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 3 {
		t.Fatalf("%d results, want the one shape under 3 conditions", len(rep.Results))
	}
	for _, res := range rep.Results {
		if !res.Correct || res.Shape != "squares" {
			t.Errorf("%s/%s: answer %q, want 385", res.Shape, res.Condition, res.Answer)
		}
		if res.ToolCalls != 10 {
			t.Errorf("%s/%s: %d tool calls, want 10", res.Shape, res.Condition, res.ToolCalls)
		}
	}
	if d, _ := rep.Find("squares", evidence.Direct); d.RoundTrips != 2 {
		t.Errorf("direct: %d round trips, want 2", d.RoundTrips)
	}
}
