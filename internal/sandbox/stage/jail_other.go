//go:build linux && !amd64

package main

// runJailStage does nothing: the jail is built on linux/amd64 only.
func runJailStage(string) {}
