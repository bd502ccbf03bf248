// Package render turns an agent's tool declarations into what Code Mode
// shows the model and the sandbox: the Python stubs of the tools package,
// the catalog text, the <code-mode> block of the system instruction and the
// description of the execute_code tool.
//
// # Registry
//
// [NewRegistry] resolves a slice of [Tool] (a namespace and a
// genai.FunctionDeclaration) into a [Registry]. Tool and namespace names are
// lower-cased and sanitised into Python identifiers; each tool gets a dotted
// path ("slack.send_message", or "get_weather" at the top level). Duplicate
// raw names in one namespace, and different names that sanitise to the same
// identifier, are errors ([DuplicateToolError], [CollisionError]).
// [Registry.Lookup] resolves a name sent from the sandbox back to its entry:
// first as a dotted path, then as a raw name unique across namespaces.
//
// # Stubs
//
// [Registry.Stubs] returns the files of the tools package, with paths
// relative to the directory on sys.path: tools/__init__.py (re-exporting
// ToolError, HTTPStatusError, ToolDeniedError, BudgetExceeded and the
// top-level tools), tools/<ns>/__init__.py and one module per tool. A stub has a keyword-only signature, required
// parameters first; optional ones default to a sentinel and are left out of
// the call when unset. It calls codemode_runtime.call with the dotted path
// and the arguments under their raw names. The docstring carries everything
// the schema says: nested fields, descriptions, enums, bounds, formats,
// patterns, defaults, unions and the applicator keywords.
//
// The package also holds search(query, limit=10) and describe(name),
// defined in [DiscoveryFile] over an index computed here: BM25 weights of
// the words of each tool's name, namespace, parameter names and
// description ([DiscoveryIndex]), and the full catalog as the descriptions
// ([DiscoveryDocs]). [Registry.Discovery] names the module to import them
// from: "tools", or "tools._discovery" when a tool or namespace takes
// their names.
//
// # Catalog and block
//
// [Registry.Catalog] renders the stubs as .pyi-like text, in [Full],
// [Signatures] (each signature with a one-line summary) or [Names] detail.
// [Registry.Block] wraps it in the <code-mode> block with the how-to-use
// text and the sandbox [Environment], fitted to the budget per section:
// while the whole block is too large, the section that is largest at its
// current detail drops one step (full, signatures, names); when even every
// section's names do not fit, a pointer to discover the tools from Python
// takes their place. With [Environment].Discovery, a block that is not
// full shows how to call search and describe. [Description] returns the execute_code description for
// a block that is appended or not.
//
// A declared result schema (ResponseJsonSchema or Response) becomes the
// return annotation and a Returns section; [Tool].ResultKey documents a
// result that reaches code wrapped as {key: result}.
//
// All output is sorted and byte-stable, so prompt caching works. A Registry
// caches what it renders; rendering an unchanged surface again costs a map
// lookup. Prompt prose lives in the embedded templates/ directory.
package render
