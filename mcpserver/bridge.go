package mcpserver

import (
	"context"
	"errors"
	"iter"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/model"

	"github.com/adk-codemode/codemode/plugin/codemode"
)

// call is one block of code a client asked to run, and where its result
// goes.
type call struct {
	code  string
	reply chan reply // buffered: the bridge never waits on it
}

// reply is the execute_code function response of a call, or why there is
// none.
type reply struct {
	response map[string]any
	err      error
}

// bridge is the model of a session's invocation. It calls no LLM: each of
// its replies is an execute_code call with the code a client sent, and
// each request it gets carries the result of the call before, which it
// hands back to the client. When the session ends, it replies with text,
// which ends the invocation.
type bridge struct {
	calls <-chan *call
	end   <-chan struct{}
	// pending is the call whose result the next request carries. Only
	// GenerateContent touches it, and the flow calls it one at a time.
	pending *call
	// invocation learns the invocation's id from the first request.
	invocation *invocation
}

var _ model.LLM = (*bridge)(nil)

func (b *bridge) Name() string { return "codemode-mcp-bridge" }

func (b *bridge) GenerateContent(ctx context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		if ic, ok := ctx.(interface{ InvocationID() string }); ok {
			b.invocation.setID(ic.InvocationID())
		}
		if b.pending != nil {
			r := reply{response: lastResponse(req)}
			if r.response == nil {
				r.err = errors.New("the block ended without a result")
			}
			b.pending.reply <- r
			b.pending = nil
		}
		select {
		case c := <-b.calls:
			b.pending = c
			yield(&model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{
				FunctionCall: &genai.FunctionCall{Name: codemode.ToolName, Args: map[string]any{"code": c.code}},
			}}}, TurnComplete: true}, nil)
		case <-b.end:
			yield(&model.LLMResponse{Content: genai.NewContentFromText("The MCP session ended.", genai.RoleModel), TurnComplete: true}, nil)
		case <-ctx.Done():
			yield(nil, context.Cause(ctx))
		}
	}
}

// lastResponse is the execute_code function response in the last content
// of req that has one, or nil.
func lastResponse(req *model.LLMRequest) map[string]any {
	for i := len(req.Contents) - 1; i >= 0; i-- {
		c := req.Contents[i]
		if c == nil {
			continue
		}
		for j := len(c.Parts) - 1; j >= 0; j-- {
			if fr := c.Parts[j].FunctionResponse; fr != nil && fr.Name == codemode.ToolName {
				return fr.Response
			}
		}
	}
	return nil
}
