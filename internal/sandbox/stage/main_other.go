//go:build !linux

// Command codemode-stage is the sandbox program of the codemode library,
// which runs on Linux only.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "codemode-stage: runs on Linux only")
	os.Exit(2)
}
