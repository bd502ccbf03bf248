// Package mcpcommand is an MCP transport for a server that runs as a child
// process and speaks over its standard input and output, made for ADK's
// mcptoolset. Unlike the MCP Go SDK's CommandTransport, which holds one
// *exec.Cmd and so can start its process only once, a [Transport] starts a
// fresh process on every Connect: when the server exits or is killed, the
// toolset's next call reconnects, which starts it again, and the call goes
// through. While it is down, the error says why: how the process ended and
// the last lines it wrote to its standard error.
//
//	ts, err := mcptoolset.New(mcptoolset.Config{
//		Transport: &mcpcommand.Transport{Args: []string{"npx", "-y", "@modelcontextprotocol/server-everything"}},
//	})
//
// Close the transport when the toolset is no longer used: it ends the
// process running then, and no Connect starts another.
package mcpcommand
