package mcpcommand_test

import (
	"log"

	"google.golang.org/adk/v2/tool/mcptoolset"

	"github.com/adk-codemode/codemode/toolset/mcpcommand"
)

// A stdio MCP server as an ADK toolset that survives the server's exit:
// the toolset's next call after a failure reconnects, which starts the
// server again.
func Example() {
	tr := &mcpcommand.Transport{Args: []string{"npx", "-y", "@modelcontextprotocol/server-everything"}}
	defer tr.Close() // ends the server, and starts no other
	ts, err := mcptoolset.New(mcptoolset.Config{Transport: tr})
	if err != nil {
		log.Fatal(err)
	}
	_ = ts // give it to the agent (llmagent.Config.Toolsets) and to Code Mode
}
