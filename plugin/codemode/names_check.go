package codemode

import (
	"fmt"

	"google.golang.org/adk/v2/tool"
)

// namedToolset is a toolset of Config.Toolsets with its namespace.
type namedToolset struct {
	ns  string
	set tool.Toolset
}

// mcpDefaultName is the name ADK gives every MCP toolset.
const mcpDefaultName = "mcp_tool_set"

// namedToolsets gives each toolset of cfg its namespace, and refuses what
// New can tell already would collide: a Namespaces entry for no toolset of
// Toolsets, an empty namespace, two toolsets in one namespace. Toolsets
// are compared as sameToolset does, never hashed: a toolset need not be a
// comparable value.
func namedToolsets(cfg Config) ([]namedToolset, error) {
	out := make([]namedToolset, 0, len(cfg.Toolsets))
	byNS := map[string]int{}
	used := make([]bool, len(cfg.Namespaces))
	for i, ts := range cfg.Toolsets {
		if ts == nil {
			return nil, fmt.Errorf("codemode: Config.Toolsets[%d] is nil", i)
		}
		ns := ts.Name()
		for j, n := range cfg.Namespaces {
			if sameToolset(n.Toolset, ts) {
				ns, used[j] = n.Name, true
			}
		}
		if ns == "" {
			return nil, fmt.Errorf("codemode: Config.Toolsets[%d] has no namespace: its Name() is empty; give it one in Config.Namespaces", i)
		}
		if j, taken := byNS[ns]; taken {
			why := ""
			if ns == mcpDefaultName {
				why = " (ADK names every MCP toolset so)"
			}
			return nil, fmt.Errorf("codemode: Config.Toolsets[%d] and Config.Toolsets[%d] are both in the namespace %q%s: give each a namespace of its own in Config.Namespaces", j, i, ns, why)
		}
		byNS[ns] = i
		out = append(out, namedToolset{ns: ns, set: ts})
	}
	for j, n := range cfg.Namespaces {
		if !used[j] {
			return nil, fmt.Errorf("codemode: Config.Namespaces[%d] (%q) is for a toolset that is not in Config.Toolsets, or not comparable: give the same toolset value in both", j, n.Name)
		}
	}
	return out, nil
}
