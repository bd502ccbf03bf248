package codemode

import (
	"fmt"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"
)

// DefaultBlocksPerTurn is Budgets.BlocksPerTurn when it is zero.
const DefaultBlocksPerTurn = 100

// Budgets bound what code may spend. Each bound is per block, except
// BlocksPerTurn. Zero means no bound, except for BlocksPerTurn, where it
// means DefaultBlocksPerTurn; a negative value means no bound.
//
// Past a bound the call is not made: Python gets a BudgetExceeded error (a
// ToolError) that names the budget, its limit and what was used, what ran
// before it stands, and the block's result tells the model which budget
// ran out.
type Budgets struct {
	// ToolCalls is the most tool calls one block may make.
	ToolCalls int
	// ToolCallsPerTool bounds the calls one block may make to a tool, by
	// the tool's name (as the agent declares it, or as the code calls it,
	// for example "slack.send_message").
	ToolCallsPerTool map[string]int
	// ResultBytes is the most bytes of tool results (their JSON) one block
	// may receive. The call whose result would pass it was made, but the
	// code gets BudgetExceeded instead of its result; later calls are not
	// made.
	ResultBytes int64
	// EgressBytes is the most bytes one block may move through the egress
	// proxy, both ways (request and response bytes as they cross the
	// proxy, TLS included for https). Once the block has moved it, the
	// proxy refuses new connections with HTTP 403 and a reason that names
	// the budget, its limit and what was used (urllib raises HTTPError
	// with it), and cuts connections in flight at the limit (a download
	// ends short). The request that crosses the limit may have reached
	// the server; none after it does. It needs a backend whose sessions
	// meter their egress (the jail with Config.Egress or Backend.Egress
	// set, see transport.EgressMetering): on another, New fails. Bytes of
	// connections an earlier block left open count against the block
	// that runs when they move. The egress policy's MaxBytes still bounds
	// the session's whole life.
	EgressBytes int64
	// BlocksPerTurn is the most execute_code calls one invocation may
	// make; past it, execute_code runs no code and tells the model to
	// answer with what it has. The model is asked once more; if it asks
	// for code again, the plugin answers that model call itself and the
	// invocation ends, so a model that keeps asking for code is called at
	// most BlocksPerTurn+2 times.
	BlocksPerTurn int
	// ModelCallsPerTurn, if positive, is the most model calls one
	// invocation may make: the call past it is answered by the plugin
	// itself, which ends the invocation. Zero means no bound (ADK Go has
	// none outside live mode).
	ModelCallsPerTurn int
}

// blocksPerTurn is the bound on execute_code calls per invocation, or 0.
func (b Budgets) blocksPerTurn() int {
	switch {
	case b.BlocksPerTurn == 0:
		return DefaultBlocksPerTurn
	case b.BlocksPerTurn < 0:
		return 0
	}
	return b.BlocksPerTurn
}

// budgetAnswer is the plugin's own answer to a model call the turn's
// budgets do not allow, which ends the invocation, or nil: the call past
// Budgets.ModelCallsPerTurn, and one made after the model was refused code
// by Budgets.BlocksPerTurn and asked for it again.
func (e *engine) budgetAnswer(invocation string) *model.LLMResponse {
	t, err := e.turnFor(invocation)
	if err != nil {
		return nil
	}
	models, refused := t.ModelCall()
	var text string
	switch limit := e.cfg.Budgets.ModelCallsPerTurn; {
	case limit > 0 && models > limit:
		text = fmt.Sprintf("I stopped here: this turn reached its budget of %d model calls (Budgets.ModelCallsPerTurn).", limit)
	case refused >= 2:
		text = fmt.Sprintf("I stopped here: this turn used its budget of %d code blocks (Budgets.BlocksPerTurn), and the model asked for more code after it was told so.", e.cfg.Budgets.blocksPerTurn())
	default:
		return nil
	}
	return &model.LLMResponse{
		Content:      &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: text}}},
		TurnComplete: true,
	}
}
