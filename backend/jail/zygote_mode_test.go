//go:build linux && amd64

package jail

import "os"

// CODEMODE_JAIL_START=zygote runs the whole suite with sessions forked
// from a template: every Backend of the tests behaves as if Zygote were
// set.
func init() {
	if os.Getenv("CODEMODE_JAIL_START") == "zygote" {
		zygoteByDefault = true
	}
}
