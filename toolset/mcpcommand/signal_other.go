//go:build !unix

package mcpcommand

import "os"

// terminateSignal asks the process to exit; elsewhere than Unix it kills.
var terminateSignal = os.Kill
