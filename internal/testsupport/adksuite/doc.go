// Package adksuite holds Code Mode's behaviours through an ADK runner,
// written once for both ADK lines: what a model, a person and a tool see
// of the plugin in a turn. A Line builds, for a Setup, a runner with the
// plugin, the Setup's model and tools, on its own ADK; the suite drives it
// in the terms both lines share (genai's contents, the transport's
// backends, the plugin's configuration by field name) and checks what
// comes out. plugin/codemode runs the suite on ADK Go v2, and its
// generated twin in adkv1 runs it on ADK Go v1, so a change to the
// engine is checked on both lines by one test, reviewed once.
//
// What only one line's glue can show (its contexts, its callback types,
// reaching into its runner) stays in that line's own tests.
package adksuite
