//go:build !linux

package sandboxbin

import (
	"fmt"
	"os"
	"runtime"
)

// Open fails: the sandbox program runs on Linux only.
func Open() (*os.File, error) {
	return nil, fmt.Errorf("sandboxbin: the sandbox program runs on Linux only, not %s", runtime.GOOS)
}

// Path fails: the sandbox program runs on Linux only.
func Path() (string, error) {
	_, err := Open()
	return "", err
}
