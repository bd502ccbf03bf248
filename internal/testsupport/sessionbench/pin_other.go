//go:build !linux

package sessionbench

// pinThread does nothing where threads cannot be pinned.
func pinThread(int) func() { return func() {} }
