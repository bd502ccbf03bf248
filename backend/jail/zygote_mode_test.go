//go:build linux && amd64

package jail

import "os"

// CODEMODE_JAIL_START=cold runs the whole suite with sessions started
// cold: every Backend of the tests behaves as if Cold were set, except
// those of the tests that ask for a forked session by name.
func init() {
	if os.Getenv("CODEMODE_JAIL_START") == "cold" {
		coldByDefault = true
	}
}
