// Package observe is what Code Mode tells an operator about the code it
// runs: OpenTelemetry spans and metrics for each block, sandbox start and
// tool call from code, and an audit log of one log/slog record per block
// and per tool call.
//
// It uses the OpenTelemetry API only: the providers come from the caller
// (the plugin's Config), by default the global ones, so nothing is
// exported unless the program set up an exporter. Spans nest under the
// caller's context: a block's span under ADK's "execute_tool execute_code"
// span, a tool call's under its block's, a sandbox start's under the
// block that needed it.
//
// Nothing recorded holds the code, an argument value, a result or output
// text, unless the operator opts in to the code ([Config.RecordCode]),
// which is then bounded and passed through [Redact]. Tool names are the
// catalog's, so the metrics' attribute sets stay bounded.
package observe
