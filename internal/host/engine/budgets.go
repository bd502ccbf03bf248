package engine

import (
	"fmt"
	"strings"

	"github.com/adk-codemode/codemode/transport"
)

// Budgets are what a block of code may spend. They are plugin/codemode's
// Budgets field for field, which documents each (the adapters convert
// theirs to this type): ToolCalls, ToolCallsPerTool, ResultBytes and
// EgressBytes per block, BlocksPerTurn and ModelCallsPerTurn per turn.
type Budgets struct {
	ToolCalls         int
	ToolCallsPerTool  map[string]int
	ResultBytes       int64
	EgressBytes       int64
	BlocksPerTurn     int
	ModelCallsPerTurn int
}

// BudgetType is the Python exception type (transport.ToolError.Type) of
// a call refused for a budget.
const BudgetType = "BudgetExceeded"

// Spend is what one block has spent of its budgets. Its block guards it.
type Spend struct {
	calls       int
	perTool     map[string]int
	resultBytes int64
	// ranOut lists each budget that refused a call, with how many it
	// refused, in the order they first did.
	ranOut  []string
	refused map[string]int
	// egressBytes is what the block moved through the egress proxy;
	// egressOut says Budgets.EgressBytes refused or cut a connection.
	egressBytes int64
	egressOut   bool
}

// exceeded refuses a call for the budget name and says so to the code.
func (s *Spend) exceeded(name, msg string) transport.ToolResult {
	if s.refused == nil {
		s.refused = map[string]int{}
	}
	if s.refused[name] == 0 {
		s.ranOut = append(s.ranOut, name)
	}
	s.refused[name]++
	return transport.ToolResult{Err: &transport.ToolError{Type: BudgetType, Message: msg}}
}

// Charge admits a call against b, counting it, or refuses it: the call is
// of the tool the agent declares as name and the code calls as code.
func (s *Spend) Charge(b Budgets, name, code string) (transport.ToolResult, bool) {
	if b.ToolCalls > 0 && s.calls >= b.ToolCalls {
		return s.exceeded("Budgets.ToolCalls", fmt.Sprintf(
			"the block's budget of %d tool calls ran out (%d made); the call to %s was not made. Finish with what you have, or ask for less per block",
			b.ToolCalls, s.calls, code)), false
	}
	key, limit := name, b.ToolCallsPerTool[name]
	if l, ok := b.ToolCallsPerTool[code]; ok {
		key, limit = code, l
	}
	if limit > 0 && s.perTool[key] >= limit {
		return s.exceeded(`Budgets.ToolCallsPerTool["`+key+`"]`, fmt.Sprintf(
			"the block's budget of %d calls to %s ran out (%d made); this call was not made",
			limit, code, s.perTool[key])), false
	}
	if b.ResultBytes > 0 && s.resultBytes >= b.ResultBytes {
		return s.exceeded("Budgets.ResultBytes", fmt.Sprintf(
			"the block's budget of %s bytes of tool results ran out (%s received); the call to %s was not made",
			Thousands(int(b.ResultBytes)), Thousands(int(s.resultBytes)), code)), false
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

// ResultSize is the size of res that Receive charges against b: its
// value's JSON, or 0 when b bounds no result bytes or res is an error. It
// encodes the value, so a caller that guards its Spend with a lock calls
// it before taking the lock.
func ResultSize(b Budgets, res transport.ToolResult) int64 {
	if b.ResultBytes <= 0 || res.Err != nil {
		return 0
	}
	return int64(JSONSize(res.Value))
}

// Receive charges res, the result of a call made to the tool the code
// calls as code, of n bytes (ResultSize), against b's result bytes: a
// result that would pass them is withheld.
func (s *Spend) Receive(b Budgets, code string, res transport.ToolResult, n int64) transport.ToolResult {
	if b.ResultBytes <= 0 || res.Err != nil {
		return res
	}
	if s.resultBytes+n > b.ResultBytes {
		left := b.ResultBytes - s.resultBytes
		s.resultBytes = b.ResultBytes
		return s.exceeded("Budgets.ResultBytes", fmt.Sprintf(
			"the result of %s is %s bytes, more than the %s left of the block's budget of %s bytes of tool results: the call was made (its effects stand), but its result is withheld, and no further call is made",
			code, Thousands(int(n)), Thousands(int(left)), Thousands(int(b.ResultBytes))))
	}
	s.resultBytes += n
	return res
}

// Egress records what the block moved through the egress proxy, and
// whether Budgets.EgressBytes refused or cut a connection.
func (s *Spend) Egress(bytes int64, exceeded bool) { s.egressBytes, s.egressOut = bytes, exceeded }

// Note tells the model which budgets of the block ran out, or is "".
func (s *Spend) Note(b Budgets) string {
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
			Thousands(int(b.EgressBytes)), Thousands(int(s.egressBytes))))
	}
	return strings.Join(lines, "\n")
}

// MeterEgress starts metering the block about to run on s against
// b.EgressBytes, when s meters its egress.
func MeterEgress(b Budgets, s transport.Session) {
	if m := transport.EgressMeterOf(s); m != nil {
		m.MeterEgress(max(b.EgressBytes, 0))
	}
}
