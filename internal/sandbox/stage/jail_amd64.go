//go:build linux

package main

import "github.com/adk-codemode/codemode/internal/sandbox/initstage"

// runJailStage runs the jail's init or payload launcher when argv0 names
// one; the jail is built on linux/amd64 only.
func runJailStage(argv0 string) { initstage.Main(argv0) }
