package adksuite

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/genai"
)

// Step is one reply of a Script, given the request it answers.
type Step func(req Request) *genai.Content

// Script is a scripted model: it replays a list of steps per user
// message, the reply to a request being the step at the position of the
// request in its turn (the number of model contents since the user's
// last text).
type Script struct {
	mu      sync.Mutex
	scripts map[string][]Step
	reqs    []Request
}

var _ Model = (*Script)(nil)

// NewScript returns a script with no steps.
func NewScript() *Script { return &Script{scripts: map[string][]Step{}} }

// On sets the steps replayed for the user message msg.
func (s *Script) On(msg string, steps ...Step) *Script {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts[msg] = steps
	return s
}

// Reply answers req with its step, recording req.
func (s *Script) Reply(_ context.Context, req Request) (*genai.Content, error) {
	msg, pos := Position(req)
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	steps := s.scripts[msg]
	s.mu.Unlock()
	if pos >= len(steps) {
		return nil, fmt.Errorf("scripted model: no step %d for %q", pos, msg)
	}
	return steps[pos](req), nil
}

// Requests returns the requests answered so far.
func (s *Script) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Position finds the last user text in the request and counts the
// contents of other roles after it.
func Position(req Request) (string, int) {
	msg, pos := "", 0
	for _, c := range req.Contents {
		if c == nil {
			continue
		}
		if c.Role == genai.RoleUser {
			for _, p := range c.Parts {
				if p.Text != "" {
					msg, pos = p.Text, 0
				}
			}
			continue
		}
		pos++
	}
	return msg, pos
}

// Exec replies with one execute_code call per piece of code, issued
// together.
func Exec(code ...string) Step {
	return func(Request) *genai.Content {
		c := &genai.Content{Role: genai.RoleModel}
		for _, src := range code {
			c.Parts = append(c.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{
				Name: ToolName, Args: map[string]any{"code": src},
			}})
		}
		return c
	}
}

// CallTool replies with a direct call of the named tool.
func CallTool(name string, args map[string]any) Step {
	return func(Request) *genai.Content {
		return &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{
			FunctionCall: &genai.FunctionCall{Name: name, Args: args},
		}}}
	}
}

// Say replies with text, ending the turn.
func Say(text string) Step {
	return func(Request) *genai.Content { return genai.NewContentFromText(text, genai.RoleModel) }
}
