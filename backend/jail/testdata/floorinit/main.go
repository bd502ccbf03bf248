//go:build linux

// Command floorinit is the floor jail's init as a program of its own, a
// few MB with no other packages: BenchmarkJailFloor builds it to show the
// floor without the size of the host binary.
package main

import (
	"os"

	"github.com/adk-codemode/codemode/backend/jail/internal/floor"
)

func main() { floor.Init(os.Args[1:]) }
