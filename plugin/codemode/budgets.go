package codemode

import (
	"fmt"
	"strings"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	eng "github.com/adk-codemode/codemode/internal/host/engine"
	"github.com/adk-codemode/codemode/transport"
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

// budgetType is the Python exception type (transport.ToolError.Type) of a
// call refused for a budget.
const budgetType = "BudgetExceeded"

// spend is what one block has spent of its budgets. Guarded by its
// block's mu.
type spend struct {
	calls       int
	perTool     map[string]int
	resultBytes int64
	// ran out lists each budget that refused a call, with how many it
	// refused, in the order they first did.
	ranOut  []string
	refused map[string]int
	// egressBytes is what the block moved through the egress proxy;
	// egressOut says Budgets.EgressBytes refused or cut a connection.
	egressBytes int64
	egressOut   bool
}

// exceeded refuses a call for the budget name and says so to the code.
func (s *spend) exceeded(name, msg string) transport.ToolResult {
	if s.refused == nil {
		s.refused = map[string]int{}
	}
	if s.refused[name] == 0 {
		s.ranOut = append(s.ranOut, name)
	}
	s.refused[name]++
	return transport.ToolResult{Err: &transport.ToolError{Type: budgetType, Message: msg}}
}

// charge admits a call of st against the block's budgets, counting it, or
// refuses it.
func (f *block) charge(b Budgets, st *surfaceTool) (transport.ToolResult, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := &f.spent
	if b.ToolCalls > 0 && s.calls >= b.ToolCalls {
		return s.exceeded("Budgets.ToolCalls", fmt.Sprintf(
			"the block's budget of %d tool calls ran out (%d made); the call to %s was not made. Finish with what you have, or ask for less per block",
			b.ToolCalls, s.calls, st.code)), false
	}
	key, limit := st.name, b.ToolCallsPerTool[st.name]
	if l, ok := b.ToolCallsPerTool[st.code]; ok {
		key, limit = st.code, l
	}
	if limit > 0 && s.perTool[key] >= limit {
		return s.exceeded(`Budgets.ToolCallsPerTool["`+key+`"]`, fmt.Sprintf(
			"the block's budget of %d calls to %s ran out (%d made); this call was not made",
			limit, st.code, s.perTool[key])), false
	}
	if b.ResultBytes > 0 && s.resultBytes >= b.ResultBytes {
		return s.exceeded("Budgets.ResultBytes", fmt.Sprintf(
			"the block's budget of %s bytes of tool results ran out (%s received); the call to %s was not made",
			eng.Thousands(int(b.ResultBytes)), eng.Thousands(int(s.resultBytes)), st.code)), false
	}
	s.calls++
	if limit > 0 {
		if s.perTool == nil {
			s.perTool = map[string]int{}
		}
		s.perTool[key]++
	}
	return transport.ToolResult{}, true
}

// receive charges the result of a call of st that was made against the
// block's budget of result bytes: a result that would pass it is withheld.
func (f *block) receive(b Budgets, st *surfaceTool, res transport.ToolResult) transport.ToolResult {
	if b.ResultBytes <= 0 || res.Err != nil {
		return res
	}
	n := int64(jsonSize(res.Value))
	f.mu.Lock()
	defer f.mu.Unlock()
	s := &f.spent
	if s.resultBytes+n > b.ResultBytes {
		left := b.ResultBytes - s.resultBytes
		s.resultBytes = b.ResultBytes
		return s.exceeded("Budgets.ResultBytes", fmt.Sprintf(
			"the result of %s is %s bytes, more than the %s left of the block's budget of %s bytes of tool results: the call was made (its effects stand), but its result is withheld, and no further call is made",
			st.code, eng.Thousands(int(n)), eng.Thousands(int(left)), eng.Thousands(int(b.ResultBytes))))
	}
	s.resultBytes += n
	return res
}

// meterEgress starts metering the block about to run on s against
// Budgets.EgressBytes, when s meters its egress.
func meterEgress(b Budgets, s transport.Session) {
	if m := transport.EgressMeterOf(s); m != nil {
		m.MeterEgress(max(b.EgressBytes, 0))
	}
}

// egressSpent records what the block moved through the egress proxy of s,
// when s meters its egress, and says whether s does.
func (f *block) egressSpent(s transport.Session) (bytes int64, exceeded, metered bool) {
	m := transport.EgressMeterOf(s)
	if m == nil {
		return 0, false, false
	}
	bytes, exceeded = m.EgressUsage()
	f.mu.Lock()
	f.spent.egressBytes, f.spent.egressOut = bytes, exceeded
	f.mu.Unlock()
	return bytes, exceeded, true
}

// budgetNote tells the model which budgets of the block ran out, or is "".
func (f *block) budgetNote(b Budgets) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := &f.spent
	var lines []string
	if len(s.ranOut) > 0 {
		parts := make([]string, len(s.ranOut))
		for i, name := range s.ranOut {
			parts[i] = fmt.Sprintf("%s (%d refused)", name, s.refused[name])
		}
		lines = append(lines, "[Budget: "+strings.Join(parts, ", ")+" ran out in this block; the calls past it raised BudgetExceeded and were not made.]")
	}
	if s.egressOut {
		lines = append(lines, fmt.Sprintf("[Budget: Budgets.EgressBytes (%s bytes) ran out in this block after %s bytes through the egress proxy; connections past it were refused (HTTP 403) or cut.]",
			eng.Thousands(int(b.EgressBytes)), eng.Thousands(int(s.egressBytes))))
	}
	return strings.Join(lines, "\n")
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
	models, refused := t.modelCall()
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
