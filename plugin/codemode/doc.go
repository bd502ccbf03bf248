// Package codemode is Code Mode for ADK Go: the model writes Python that
// runs in a sandbox and calls the agent's tools as typed functions imported
// from a generated tools package. One call to a tool from code costs no
// model round trip, loops and joins happen in Python, and only what the
// code prints comes back to the model.
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
// is the local namespace jail running the host's python3. The tools given
// to Code Mode are the ones the code may call; give the agent itself only
// the tools the model should call directly.
//
// Agents run without a runner plugin use package callbacks instead, which
// wires the same hooks as llmagent callbacks.
//
// # Hooks
//
// The plugin registers five hooks:
//
//   - before-run records the agent an invocation starts with (its root);
//   - before-model runs on every model call of every LLM agent the runner
//     runs. It resolves the tools (toolsets once per invocation), runs the
//     request hooks (ProcessRequest) of those tools and toolsets as the flow
//     runs a direct tool's, without the declarations they pack, appends
//     the <code-mode> block to the system instruction and adds execute_code
//     to the request, both the declaration the model sees and the tool the
//     flow runs when the model calls it. It returns (nil, nil), so the model
//     call always proceeds; if the tools cannot be resolved (a toolset fails,
//     two tools collide, a toolset offers a tool that works only directly,
//     see [DirectOnlyError]) or a request hook fails, it returns the error
//     and the model call is skipped.
//     The block shows the sandbox's Python version and packages from the
//     first model call on: the backend is probed once per process and the
//     result cached by [transport.Backend] name;
//   - on-tool-error carries a person's answer to a request for approval made
//     from code back to the paused block (see "Approval from code" in
//     docs/plugin.md); it returns (nil, nil) for every other error, so the
//     next callback or the flow's own handling sees it;
//   - after-agent ends the turn when the root agent finishes; it returns
//     (nil, nil) and never replaces the agent's output;
//   - after-run ends the turn when the runner finishes the invocation, in
//     case the run was cut short before the root agent's after-agent hook.
//
// Code Mode registers no before-tool or after-tool callbacks, so it never
// vetoes or rewrites a direct tool call.
//
// # execute_code and turns
//
// execute_code takes one string parameter, code, and returns
// {"stdout": ..., "stderr": ..., "output_files": [...]}. Code longer than
// Config.MaxCodeChars is refused before any sandbox starts. A non-zero exit
// adds "Process exited with code N." to stderr. stdout and stderr are each
// cut to Config.MaxOutputChars characters: the first 70% and the end, with
// a note; with an artifact service the full text is saved as an artifact
// the note names. Both are passed on as untrusted data: a line that
// imitates conversation structure (a role label such as "system:", also
// behind a label as in "Echo: system:", a chat-template token, a
// <code-mode> or tool-result tag) is prefixed with "[untrusted output] "
// and its tags are written with &lt; and &gt;. A traceback's frame of the
// code (File "<code-mode>", line 3) is Python's text, left as it is.
// output_files names the artifacts the workspace files created or changed
// by the block were saved as (empty without an artifact service).
//
// A turn is one invocation. Its first execute_code call opens a sandbox,
// which the turn's later calls reuse: variables, imports and files in the
// working directory carry from one call to the next and are gone in the
// next turn. Calls of one invocation run one at a time, even when the model
// issues several in parallel; different invocations have different
// sandboxes and run concurrently. The turn ends, and its sandbox is closed,
// when the root agent finishes; an idle reaper closes a turn unused for
// Config.IdleTimeout in case its end was never seen; Close closes every
// sandbox and stops the reaper.
//
// A block that runs past Config.Timeout is interrupted in place and keeps
// its variables; one that does not stop within a few seconds is killed and
// the turn's variables are lost. Either way stderr says so. When the
// connection to the sandbox is lost, the model is told which of three
// cases happened: the code did not run (retried once on a fresh sandbox
// first; when the lost sandbox held earlier blocks' state, stderr says that
// state is gone), it may or may not have run, or it ran but its output was
// lost. The last two are never retried. A sandbox that speaks another protocol
// version ends the turn and execute_code returns a
// [*transport.VersionError].
//
// # Tools called from code
//
// A tool call from code runs on the host like a direct call of that tool
// does: arguments are validated against the declared schema, then the
// runner's plugins' before-tool callbacks run, then the agent's (the first
// non-nil result or error replaces the call), then the tool, then on an
// error the plugins' and the agent's on-error callbacks, then the plugins'
// and the agent's after-tool callbacks. The tool gets an ADK tool context of
// its own, with the function call id "codemode-<execute_code call id>-<n>".
// The state it writes and the artifacts it saves are merged into the
// execute_code call's, so they land on its event and in the session.
//
// The code gets the result the stub's return annotation names, whatever
// its size: a tool that wraps its result (mcptoolset's {"output": v},
// functiontool's {"result": v} for an output that is not an object, the
// OpenAPI toolset's {"result": body}, or any tool with a method
// ResultKey() string naming its key) has it taken out, so the code gets v.
//
// A failed call raises a Python exception: ToolError, whose str is
// "<type>: <message>" with the Go error's type name (ValidationError for
// arguments that do not match the schema), or TimeoutError past the tool's
// timeout (Config.ToolTimeout, or a lower one passed by the code). An error
// that reports an HTTP status ([StatusCoder]) raises HTTPStatusError with
// status_code and body. A tool
// that requests an agent transfer or an escalation, or a long-running tool
// that returns no immediate result, is refused with an
// [UnsupportedToolActionError]: code cannot hand the conversation over.
//
// A tool that asks a person for confirmation pauses the block at its call:
// execute_code returns with the tool's request on its actions, ADK's flow
// asks the person with its adk_request_confirmation call (the original call
// being the execute_code call), and the sandbox, the block and its variables
// wait for the answer for [Config.ApprovalTimeout]. When ADK runs the
// execute_code call again with the answer, the same block resumes: approved,
// the tool runs and the code continues; denied, the code gets
// ToolDeniedError. See docs/plugin.md, "Approval from code".
//
// ADK Go keeps the plugin manager and an agent's tool callbacks internal.
// Code Mode finds the plugin manager through the invocation's context and
// an agent's callbacks through the Config that llmagent.New keeps, reading
// ADK's state without changing it. If either cannot be found with the ADK
// version in use, calls from code fail with a [*CallbackError] rather than
// run without the callbacks.
//
// # Artifacts
//
// With an artifact service on the runner, the code can keep data across
// turns: save_artifact, load_artifact and list_artifacts are importable
// from tools (Config.DisableArtifactTools leaves them out); the files a
// block creates or changes in the workspace are saved under
// [WorkspaceArtifactName]; and the tool results of a block are saved
// together, as one tool-result artifact written when the block's
// execute_code call returns ([IsToolResultArtifact], [ReadToolResults];
// Config.DisableToolResultArtifacts turns this off). A result the code
// names with artifact_name is saved alone under that name, and one over
// Config.LargeResultBytes alone at once; the code gets every result
// itself, whatever is saved. Every
// version saved during a block is on the execute_code event's
// Actions.ArtifactDelta and is passed to Config.OnArtifactsSaved. Without
// an artifact service, the artifact tools raise a ToolError of type
// ArtifactServiceUnavailableError and nothing else is saved.
//
// # Security
//
// The default backend runs each sandbox in fresh Linux namespaces with no
// network, a read-only root, resource limits, no capabilities and a seccomp
// filter (see package jail). The unsandboxed backend is for development
// only: it isolates nothing. The sandbox reaches the host only through the
// tools given in Config, each call passing through the same callbacks as a
// direct call, so a policy enforced in a before-tool callback holds for code
// too. Everything the sandbox sends is treated as hostile input.
package codemode
