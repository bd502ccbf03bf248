package evidence

import (
	"slices"

	"google.golang.org/adk/v2/agent/llmagent"

	"github.com/adk-codemode/codemode/plugin/codemode"
)

// hybridTools makes the tools fx names as direct callable both directly,
// as the agent's own tools, and from code.
func hybridTools(acfg *llmagent.Config, _ *codemode.Config, fx *fixture) {
	for _, t := range fx.tools {
		if slices.Contains(fx.direct, t.Name()) {
			acfg.Tools = append(acfg.Tools, t)
		}
	}
}
