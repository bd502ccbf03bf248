// Package evidence measures what Code Mode saves against direct tool
// calling, and what it costs. It runs task shapes (one lookup, a dependent
// chain, a fan-out and join, a reduction of a large result, a filter then
// one call per match, pagination, a step that needs the model's judgement,
// and finding one operation among GitHub's 1,223) under three conditions:
// direct tools on a plain ADK agent, Code Mode with the tools behind
// execute_code, and a hybrid where the tools are callable both ways.
//
// The tools are deterministic Go functions; each shape's answer is computed
// in Go from the same data and checked against the agent's final text. The
// model is scripted: per shape and condition it does what an ideal model
// would (the shortest trajectory of direct calls, the best program), so
// the figures are the mechanics' best case, not any model's accuracy.
// Per shape and condition it records the model round trips, the size of
// every request sent to the model and of what tool results put into the
// context (in bytes, and in tokens with a [Tokenizer]: [StartGemma3] runs
// Gemma 3's published tokenizer), the tool calls made, and the wall time
// without the scripted model, split by Code Mode's spans into sandbox
// start, blocks and tools. [Run] returns a [Report], which writes itself
// as Markdown and JSON.
package evidence
