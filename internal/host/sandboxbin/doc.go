// Package sandboxbin holds the sandbox program, internal/sandbox/stage,
// built for linux/amd64 and linux/arm64 and embedded compressed, and hands
// it out as an executable descriptor ([Open]). Every local sandbox starts
// it in place of the host program: the jail's init and the supervisor of
// every jailed and unsandboxed session. So no code of the host program (a
// user's package initializers, its configuration, its clients) ever runs
// in a sandbox, and a start costs the same from any program: this small
// static binary's runtime comes up in about a millisecond.
//
// The program is built by go generate (gen.go) with the Go toolchain named
// in stage.version, with cgo off, -trimpath and no build id, so the same
// sources and toolchain give the same bytes; TestUpToDate rebuilds it and
// fails if the embedded copy differs.
package sandboxbin

//go:generate go run gen.go
