// Package mcpserver serves Code Mode as an MCP server, so that any MCP
// client (a desktop assistant, an IDE) can use a whole catalog of tools
// through three small MCP tools instead of loading every tool declaration
// into its prompt:
//
//   - execute runs Python in a sandbox where the tools are importable as
//     typed functions from the tools package, exactly as the Code Mode
//     plugin offers them to an ADK agent;
//   - search ranks the tools by how well they match a query;
//   - describe shows one tool's import line, signature and docstring.
//
// The tools are ADK tools and toolsets: MCP servers reached through ADK's
// mcptoolset, OpenAPI documents through package toolset/openapi, Go
// function tools. Give them, and a backend, in [Config.CodeMode]:
//
//	s, err := mcpserver.New(mcpserver.Config{CodeMode: codemode.Config{
//		Toolsets: []tool.Toolset{github},
//		Tools:    []tool.Tool{getWeather},
//	}})
//	if err != nil { ... }
//	defer s.Close()
//	err = s.MCP().Run(ctx, &mcp.StdioTransport{})
//
// # Sessions
//
// Each MCP client session gets its own ADK runner with the Code Mode
// plugin, and one long invocation whose model is a bridge that calls no
// LLM: each execute call of the client becomes one execute_code call of
// that invocation, and its result goes back to the client. Everything the
// plugin does therefore applies unchanged: callbacks, typed errors, output
// bounds, budgets, observability, the sandbox of the turn. Variables,
// imports and files persist from one execute call to the next of the same
// client session, until the session ends or idles out
// ([Config.IdleTimeout]); the next call then starts a fresh sandbox and
// says so. The client's cancellation of a call interrupts the running
// block in place, as its timeout would: the session keeps its variables.
// At most [Config.MaxSessions] sessions hold a sandbox at a time; past
// that, the one idle longest is closed.
//
// A tool that needs a person's approval pauses the block; the execute
// call asks the client through elicitation (as an input request of the
// protocol's multi round-trip requests), and its retry with the answer
// resumes the block: approved, the tool runs; declined, the code gets
// ToolDeniedError. A client without elicitation has the call declined.
//
// An execute call that asks for progress (its request has a progress
// token) is told every [Config.ProgressInterval] how long its code has
// run.
//
// # Files
//
// The files a block creates or changes in its working directory come back
// in the execute result: up to 64 KiB each (256 KiB in all), embedded as
// resources (text as text, anything else as a blob); larger ones as
// resource links, codemode://session/TOKEN/files/NAME, which resources/read
// serves to the client session that ran the block and to no other. The
// full text of an output stream cut for the client comes back the same
// way. Each client session has an in-memory ADK artifact service, through
// which the plugin hands the files over; the session keeps the files of its
// links (the latest version of each, at most 64 MiB and 1,000 files, the
// oldest dropped first) until it ends. The artifact tools, and the saving
// of tool results as artifacts, stay off.
package mcpserver
