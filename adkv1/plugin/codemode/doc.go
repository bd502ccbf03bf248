// Package codemode is Code Mode for ADK Go v1 (google.golang.org/adk): the
// model writes Python that runs in a sandbox and calls the agent's tools
// as typed functions imported from a generated tools package. One call to
// a tool from code costs no model round trip, loops and joins happen in
// Python, and only what the code prints comes back to the model.
//
// This package is the same plugin as
// github.com/adk-codemode/codemode/plugin/codemode, which is written for
// ADK Go v2, translated to v1 by the repository's generator: the API, the
// behaviour and the configuration are the same, and that package's
// documentation (the hooks, execute_code and turns, tools called from
// code, approvals, artifacts, security) is this one's. Where v2 gives
// tools and callbacks one agent.Context, v1 gives tools an
// agent.ToolContext and callbacks an agent.CallbackContext.
//
// # Registration
//
// [New] returns an ADK plugin; register it on the runner:
//
//	p, err := codemode.New(codemode.Config{Tools: []tool.Tool{getWeather, convert}})
//	if err != nil { ... }
//	defer p.Close()
//	r, err := runner.New(runner.Config{
//		AppName:        "app",
//		Agent:          rootAgent,
//		SessionService: session.InMemoryService(),
//		PluginConfig:   runner.PluginConfig{Plugins: []*plugin.Plugin{p}},
//	})
//
// The agent needs no change. The zero [Config] works: the default backend
// is the local namespace jail running the host's python3. Agents run
// without a runner plugin use package
// github.com/adk-codemode/codemode/adkv1/callbacks instead.
package codemode
