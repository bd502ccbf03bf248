//go:build linux && amd64

package initstage

import "github.com/adk-codemode/codemode/internal/syscallpolicy"

// The jail's seccomp filter is internal/syscallpolicy's.

// FilterBytes is the session filter as the kernel takes it, for a session
// that loads it itself.
func FilterBytes() ([]byte, error) { return syscallpolicy.FilterBytes() }

// loadSeccomp installs the session's or the template's filter on every
// thread. The caller must have set no_new_privs.
func loadSeccomp(template bool) error { return syscallpolicy.Install(template) }
