// Package engine is Code Mode's engine without ADK: what both ADK adapters
// (plugin/codemode for ADK Go v2, and adkv1's for v1, generated from it)
// share, so that it is written, reviewed and tested once. It imports no
// ADK package (the layering test holds it to that).
//
// It holds, so far, a block's lifecycle (Launch, Block: the code runs on
// a goroutine of its own, pauses between tool calls at a request for a
// person's approval, resumes with the answer, and is bounded by a run
// clock that does not count the wait; RunBlock: a block that could not be
// sent runs again once in a fresh sandbox, a lost one is classified for
// the model), what the model reads of a block's output (bounded to a
// limit, with its head and tail, and neutralised so that it cannot pass
// for the system, the user or a tool result), values made safe for JSON,
// the text of a tool's error as the sandbox gets it (no host stack or
// paths), the once-per-tool report of argument validation, the sandbox
// environment shown in the <code-mode> block, what a block spends of its
// budgets, and how blocks and tool calls ended, for their spans and audit
// records. The turns, parking a paused block past its call, results and
// the tool surface are to move here behind one small interface to ADK's
// tool calls, leaving the adapters their hooks, tool contexts and callback
// chain.
package engine
