package evidence

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
)

// A Shape is a task: its prompt, its tools and its checked answer, and
// the scripted policies that solve it directly and through code.
type Shape struct {
	// Name is the shape's short name, as the report and -shapes give it.
	Name string
	// Title says what the shape is, for the report.
	Title string
	// Hybrid is how the hybrid condition's model solves it: Direct or Code
	// (what the routing hint advises for the shape).
	Hybrid Condition
	// setup builds a fresh fixture for one run.
	setup func(ctx context.Context, opts Options) (*fixture, error)
}

// fixture is one run's tools, answer and policies.
type fixture struct {
	prompt   string
	tools    []tool.Tool
	toolsets []tool.Toolset
	// direct names the tools the hybrid condition makes callable directly.
	direct []string
	answer string
	// calls counts the runs of the real tools.
	calls         *atomic.Int64
	direct0, code func() Policy
	close         func()
}

// Shapes returns every shape, in the report's order.
func Shapes() []Shape {
	return []Shape{
		{Name: "lookup", Title: "one lookup (1 call)", Hybrid: Direct, setup: lookup},
		{Name: "chain", Title: "dependent chain of 8 calls", Hybrid: Code, setup: chain},
		{Name: "fanout", Title: "fan-out of 18 calls and a join", Hybrid: Code, setup: fanout},
		{Name: "reduce", Title: "reduce 5,000 rows to one number", Hybrid: Code, setup: reduce},
		{Name: "filter", Title: "filter, then one call per match (N+1)", Hybrid: Code, setup: filterEach},
		{Name: "paginate", Title: "pagination through 12 pages", Hybrid: Code, setup: paginate},
		{Name: "judge", Title: "judgement on a text between two calls", Hybrid: Direct, setup: judge},
		{Name: "github", Title: "find and call 1 of GitHub's 1,223 operations", Hybrid: Code, setup: github},
	}
}

// newTool makes a functiontool whose runs are counted in n.
func newTool[A, R any](n *atomic.Int64, name, desc string, f func(A) (R, error)) (tool.Tool, error) {
	return functiontool.New(functiontool.Config{Name: name, Description: desc}, func(_ agent.Context, a A) (R, error) {
		n.Add(1)
		return f(a)
	})
}

// tools builds tools with newTool, stopping at the first error.
type toolList struct {
	n    *atomic.Int64
	list []tool.Tool
	err  error
}

func add[A, R any](tl *toolList, name, desc string, f func(A) (R, error)) {
	if tl.err != nil {
		return
	}
	t, err := newTool(tl.n, name, desc, f)
	if err != nil {
		tl.err = fmt.Errorf("tool %s: %w", name, err)
		return
	}
	tl.list = append(tl.list, t)
}

// names are the names of the tools.
func names(ts []tool.Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name()
	}
	return out
}

// seeded is the data's random source: the same numbers on every run.
func seeded(shape uint64) *rand.Rand { return rand.New(rand.NewPCG(20260, shape)) }

// ---- one lookup

type customerArgs struct {
	CustomerID string `json:"customer_id" jsonschema:"the customer's id, such as C-0001"`
}

type customer struct {
	CustomerID string `json:"customer_id"`
	Name       string `json:"name"`
	Tier       string `json:"tier"`
	City       string `json:"city"`
}

func lookup(context.Context, Options) (*fixture, error) {
	r := seeded(1)
	tiers := []string{"bronze", "silver", "gold", "platinum"}
	cities := []string{"Oslo", "Lisbon", "Porto", "Turku", "Graz", "Ghent", "Lyon", "Cork"}
	first := []string{"Ada", "Bo", "Cy", "Di", "Eli", "Fay", "Gus", "Hal"}
	db := map[string]customer{}
	for i := 1; i <= 200; i++ {
		id := fmt.Sprintf("C-%04d", i)
		db[id] = customer{CustomerID: id, Name: first[r.IntN(len(first))] + " " + strconv.Itoa(i), Tier: tiers[r.IntN(len(tiers))], City: cities[r.IntN(len(cities))]}
	}
	const id = "C-0137"
	tl := &toolList{n: new(atomic.Int64)}
	add(tl, "get_customer", "Return a customer's record: name, tier and city.", func(a customerArgs) (customer, error) {
		c, ok := db[a.CustomerID]
		if !ok {
			return customer{}, fmt.Errorf("no customer %q: ids are C- and four digits", a.CustomerID)
		}
		return c, nil
	})
	return &fixture{
		prompt: "What tier is customer " + id + " on? Answer with the tier only.",
		tools:  tl.list, direct: names(tl.list), answer: db[id].Tier, calls: tl.n,
		direct0: func() Policy {
			return steps(
				func(Observation) (Turn, error) {
					return Turn{Calls: []*genai.FunctionCall{call("get_customer", map[string]any{"customer_id": id})}}, nil
				},
				func(obs Observation) (Turn, error) {
					c, err := response[customer](obs, "get_customer")
					return answer(c.Tier), err
				})
		},
		code: func() Policy {
			return steps(
				func(Observation) (Turn, error) {
					return code("from tools import get_customer\nprint(get_customer(customer_id=" + strconv.Quote(id) + ")[\"tier\"])\n"), nil
				},
				printed)
		},
	}, tl.err
}

// ---- a dependent chain of 8 calls

type hopArgs struct {
	Node string `json:"node" jsonschema:"a node id, such as n-0001"`
}

type hop struct {
	Node string `json:"node"`
	Next string `json:"next"`
}

const chainLength = 8

func chain(context.Context, Options) (*fixture, error) {
	perm := seeded(2).Perm(10000)
	next := func(node string) (string, bool) {
		n, err := strconv.Atoi(strings.TrimPrefix(node, "n-"))
		if !strings.HasPrefix(node, "n-") || err != nil || n < 0 || n >= len(perm) {
			return "", false
		}
		return fmt.Sprintf("n-%04d", perm[n]), true
	}
	const start = "n-0001"
	want := start
	for range chainLength {
		want, _ = next(want)
	}
	tl := &toolList{n: new(atomic.Int64)}
	add(tl, "next_hop", "Return the node that follows a node in the routing table.", func(a hopArgs) (hop, error) {
		n, ok := next(a.Node)
		if !ok {
			return hop{}, fmt.Errorf("no node %q: ids are n- and four digits", a.Node)
		}
		return hop{Node: a.Node, Next: n}, nil
	})
	prompt := fmt.Sprintf("Start at node %s and follow next_hop %d times. Which node do you reach? Answer with its id only.", start, chainLength)
	return &fixture{
		prompt: prompt, tools: tl.list, direct: names(tl.list), answer: want, calls: tl.n,
		direct0: func() Policy {
			return func(obs Observation) (Turn, error) {
				node := start
				if obs.Step > 0 {
					h, err := response[hop](obs, "next_hop")
					if err != nil {
						return Turn{}, err
					}
					node = h.Next
				}
				if obs.Step == chainLength {
					return answer(node), nil
				}
				return Turn{Calls: []*genai.FunctionCall{call("next_hop", map[string]any{"node": node})}}, nil
			}
		},
		code: func() Policy {
			return steps(
				func(Observation) (Turn, error) {
					return code(fmt.Sprintf("from tools import next_hop\nnode = %q\nfor _ in range(%d):\n    node = next_hop(node=node)[\"next\"]\nprint(node)\n", start, chainLength)), nil
				},
				printed)
		},
	}, tl.err
}

// A Task is one run of a shape of your own: what NewShape's setup returns.
type Task struct {
	// Prompt is the user's message.
	Prompt string
	// Tools and Toolsets are the task's tools: the direct condition's
	// agent has them as its own, the code conditions give them to Code
	// Mode.
	Tools    []tool.Tool
	Toolsets []tool.Toolset
	// Direct names the tools the hybrid condition lets the model call
	// directly as well (Config.Direct).
	Direct []string
	// Answer is the checked answer: the final text must be exactly it,
	// spaces at either end aside.
	Answer string
	// Calls, if set, counts your tools' runs, for the report's tool calls;
	// nil reports none.
	Calls *atomic.Int64
	// DirectPolicy and CodePolicy make a fresh scripted model's policy for
	// one run: the best trajectory of direct calls, and the best program
	// through execute_code.
	DirectPolicy, CodePolicy func() Policy
	// Close, if set, is called when the run ends.
	Close func()
}

// NewShape makes a shape of your own, for Options.Extra: name and title
// for the report, hybrid the route the hybrid condition's model takes
// (Direct or Code), and setup, which builds one run's task (called once
// per run, so that each run starts afresh).
func NewShape(name, title string, hybrid Condition, setup func(ctx context.Context) (*Task, error)) Shape {
	return Shape{Name: name, Title: title, Hybrid: hybrid, setup: func(ctx context.Context, _ Options) (*fixture, error) {
		t, err := setup(ctx)
		if err != nil {
			return nil, err
		}
		if t.DirectPolicy == nil || t.CodePolicy == nil {
			return nil, fmt.Errorf("evidence: shape %s: its Task needs both DirectPolicy and CodePolicy", name)
		}
		calls := t.Calls
		if calls == nil {
			calls = new(atomic.Int64)
		}
		closeFn := t.Close
		if closeFn == nil {
			closeFn = func() {}
		}
		return &fixture{prompt: t.Prompt, tools: t.Tools, toolsets: t.Toolsets, direct: t.Direct, answer: t.Answer,
			calls: calls, direct0: t.DirectPolicy, code: t.CodePolicy, close: closeFn}, nil
	}}
}
