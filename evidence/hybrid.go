package evidence

import (
	"github.com/adk-codemode/codemode/plugin/codemode"
)

// hybridTools makes the tools fx names as direct callable both directly
// and from code: one line of the plugin's Config.
func hybridTools(ccfg *codemode.Config, fx *fixture) {
	ccfg.Direct = fx.direct
}
