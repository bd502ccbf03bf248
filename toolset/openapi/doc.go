// Package openapi is an ADK tool.Toolset built from an OpenAPI 3.0 or 3.1
// document: one tool per operation, whose calls the host sends as HTTP
// requests with credentials the model and the sandbox never see.
//
//	ts, err := openapi.New(ctx, openapi.Config{
//		File: "github.yaml",
//		Auth: map[string]openapi.Credential{"bearer": {Token: os.Getenv("GITHUB_TOKEN")}},
//	})
//	if err != nil { ... }
//	p, err := codemode.New(codemode.Config{Toolsets: []tool.Toolset{ts}})
//
// Reading the document, naming the tools, their schemas, the calls, their
// results and errors are package github.com/adk-codemode/codemode/openapi's,
// which does not import ADK and whose documentation says how each works;
// this package's Config, Credential, Report and errors are that
// package's. A tool's Run is the operation's Call; each tool also has a
// ResultKey method, by which Code Mode hands code the response body
// itself, and adds itself to a model request as ADK's own tools do, so the
// toolset works on an agent without Code Mode too.
//
// A Toolset and its tools are safe for concurrent use.
package openapi
