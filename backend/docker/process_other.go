//go:build !unix

package docker

// processExists cannot tell here, so it keeps every owner alive: containers
// left behind are not removed automatically on this platform.
func processExists(pid int) bool { return true }
