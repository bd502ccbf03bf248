package evidence

import (
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/genai"
)

// A Turn is what the scripted model says in one reply: function calls (the
// tools', or one execute_code call), or, with none, the final answer.
type Turn struct {
	Calls  []*genai.FunctionCall
	Answer string
}

// An Observation is what the scripted model reads before a reply: how many
// replies it has made since the user's message, and the function
// responses of the last turn, in the order of the calls.
type Observation struct {
	Step      int
	Responses []*genai.FunctionResponse
}

// A Policy picks the next reply. A shape makes a fresh one for each run,
// so a policy may keep what it has read so far.
type Policy func(Observation) (Turn, error)

// call is a function call by name.
func call(name string, args map[string]any) *genai.FunctionCall {
	return &genai.FunctionCall{Name: name, Args: args}
}

// code is a turn that runs src through execute_code.
func code(src string) Turn {
	return Turn{Calls: []*genai.FunctionCall{call("execute_code", map[string]any{"code": src})}}
}

// answer is the final turn.
func answer(s string) Turn { return Turn{Answer: s} }

// stdout returns the output of the execute_code call the last turn made,
// or an error when the block failed: a scripted program that fails is a
// fault of the harness, not a result.
func stdout(obs Observation) (string, error) {
	for _, r := range obs.Responses {
		if r.Name != "execute_code" {
			continue
		}
		out, _ := r.Response["stdout"].(string)
		errText, _ := r.Response["stderr"].(string)
		if e, ok := r.Response["error"]; ok {
			return "", fmt.Errorf("execute_code failed: %v (stderr %q)", e, errText)
		}
		// The scripted programs write nothing to stderr.
		if errText != "" {
			return "", fmt.Errorf("the block wrote to stderr: %q", errText)
		}
		return strings.TrimSpace(out), nil
	}
	return "", fmt.Errorf("step %d: no execute_code response among %d", obs.Step, len(obs.Responses))
}

// responses returns the responses of the last turn to calls of name, in
// order, decoded into T through JSON.
func responses[T any](obs Observation, name string) ([]T, error) {
	var out []T
	for _, r := range obs.Responses {
		if r.Name != name {
			continue
		}
		if e, ok := r.Response["error"]; ok {
			return nil, fmt.Errorf("%s failed: %v", name, e)
		}
		b, err := json.Marshal(r.Response)
		if err != nil {
			return nil, err
		}
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("the response of %s does not decode: %w", name, err)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("step %d: no response of %s among %d", obs.Step, name, len(obs.Responses))
	}
	return out, nil
}

// response is the one response of the last turn to a call of name.
func response[T any](obs Observation, name string) (T, error) {
	rs, err := responses[T](obs, name)
	if err != nil {
		var zero T
		return zero, err
	}
	return rs[0], nil
}

// steps makes a policy of one function per reply, in order.
func steps(fs ...func(Observation) (Turn, error)) Policy {
	return func(obs Observation) (Turn, error) {
		if obs.Step >= len(fs) {
			return Turn{}, fmt.Errorf("the policy has no step %d", obs.Step)
		}
		return fs[obs.Step](obs)
	}
}

// printed is a step that answers with the last block's output.
func printed(obs Observation) (Turn, error) {
	out, err := stdout(obs)
	if err != nil {
		return Turn{}, err
	}
	return answer(out), nil
}
