//go:build linux && amd64

package jail

import (
	"testing"

	"github.com/adk-codemode/codemode/internal/sandbox/initstage"
)

// TestStageAgrees: the init stage writes the sandbox user's uid into the
// jail's /etc/passwd from its own copy of PayloadID.
func TestStageAgrees(t *testing.T) {
	if PayloadID != initstage.PayloadID {
		t.Errorf("PayloadID = %d, the init stage's %d", PayloadID, initstage.PayloadID)
	}
}
