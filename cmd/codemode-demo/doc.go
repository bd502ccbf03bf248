// Command codemode-demo runs an ADK agent with the Code Mode plugin on a
// short task and prints what happens: the model's text, the code it writes,
// each tool call the code makes, and what the code prints.
//
// With GOOGLE_API_KEY set it talks to Gemini (choose the model with -model
// or CODEMODE_MODEL); GOOGLE_GEMINI_BASE_URL, read by the genai client,
// sends the requests to another endpoint that speaks the Gemini API, such
// as a proxy. Without the key, it replays a scripted model, and says so;
// the sandbox and the tools are real either way.
//
//	go run ./cmd/codemode-demo
//	go run ./cmd/codemode-demo -backend unsandboxed   # hosts without namespaces
//	go run ./cmd/codemode-demo -trace                 # then the run's trace, as a tree
//
// With -trace (or CODEMODE_TRACE=1) the run's spans, ADK's and Code
// Mode's, are kept in memory and printed as a tree after the transcript
// (see docs/observability.md).
package main
