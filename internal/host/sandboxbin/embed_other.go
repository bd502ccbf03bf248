//go:build linux && !amd64 && !arm64

package sandboxbin

// compressed is empty: the program is built for amd64 and arm64 only.
var compressed []byte
