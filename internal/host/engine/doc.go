// Package engine is Code Mode's engine without ADK: what both ADK adapters
// (plugin/codemode for ADK Go v2, and adkv1's for v1, generated from it)
// share, so that it is written, reviewed and tested once. It imports no
// ADK package (the layering test holds it to that).
//
// It holds, so far:
//   - the turns (Turns, Turn): one per invocation, with its surface and its
//     sandbox, opened on first use and closed by the release rule (once
//     released, when nothing uses it and no block of it awaits approval),
//     a parked turn adopted by the invocation that resumes it, and the
//     reaper of idle turns;
//   - a block's lifecycle (Launch, Block): the code runs on a goroutine of
//     its own, pauses between tool calls at a request for a person's
//     approval, resumes with the answer, and is bounded by a run clock
//     that does not count the wait; RunBlock runs it on the turn's
//     sandbox, once more on a fresh one when it could not be sent, and
//     classifies a lost sandbox for the model;
//   - the blocks parked for approval past their execute_code call
//     (Parked), their expiry, and the notices the model gets about blocks
//     that are gone; what the person is asked (ApprovalRequest.Confirmation);
//   - the tool surface of an invocation (Surface): the catalog, the tools
//     package, lookup by the names code uses, the parameters that name a
//     saved result, argument validation; and the dispatch of a tool call
//     from code (Dispatch: budgets, timeouts, approvals);
//   - what the model reads of a block's output (Output: bounded to a
//     limit, with its head and tail, and neutralised so that it cannot
//     pass for the system, the user or a tool result; a cut stream and the
//     changed files saved as artifacts, by the names Code Mode gives
//     them) and the tool results saved as artifacts (Results), values
//     made safe for JSON, the
//     text of a tool's error as the sandbox gets it (no host stack or
//     paths), the once-per-tool report of argument validation, the sandbox
//     environment shown in the <code-mode> block, what a block spends of
//     its budgets, and how blocks and tool calls ended, for their spans
//     and audit records.
//
// The adapters keep what is ADK's: their hooks, tool contexts, the callback
// chain, the actions and events a result goes on, and Config.
package engine
