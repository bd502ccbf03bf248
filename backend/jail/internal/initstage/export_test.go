//go:build linux && amd64

package initstage

// What the tests, which are in package initstage_test, see of the package.
// This file imports nothing: an internal test file that imported testing
// would make the package depend on it in the test binary, where
// TestHookRunsEarly would then find it initialized late.
var (
	FilterProgram  = filterProgram
	DeniedSyscalls = deniedSyscalls
)

const (
	RetAllow = retAllow
	RetKill  = retKill
	RetEPERM = retEPERM
	OffNr    = offNr
	OffArch  = offArch
	OffArg0  = offArg0
)
