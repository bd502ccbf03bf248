//go:build linux

package sandboxbin

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// minFD is the lowest descriptor number the program is kept at: above the
// descriptors a starting child is given (os/exec places ExtraFiles at 3,
// 4, ... before the exec reads the path [Path] names), so that none of
// them can take its number.
const minFD = 100

var (
	once    sync.Once
	program *os.File
	openErr error
)

// Open returns a read-only, executable descriptor of the sandbox program,
// made once per process and kept open: pass it to a process that is to
// execute it (as an extra file), or start it through [Path]. The caller
// must not close it.
func Open() (*os.File, error) {
	once.Do(func() { program, openErr = open() })
	return program, openErr
}

// Path returns a path that executes the sandbox program in this process
// and in any child it starts, up to the child's exec: /proc/self/fd/N.
func Path() (string, error) {
	f, err := Open()
	if err != nil {
		return "", err
	}
	return "/proc/self/fd/" + strconv.Itoa(int(f.Fd())), nil
}

func open() (*os.File, error) {
	if len(compressed) == 0 {
		return nil, fmt.Errorf("sandboxbin: the sandbox program is not built for %s/%s (only linux/amd64 and linux/arm64)", runtime.GOOS, runtime.GOARCH)
	}
	zr, err := gzip.NewReader(bytes.NewReader(compressed))
	if err != nil {
		return nil, fmt.Errorf("sandboxbin: the embedded program: %w", err)
	}
	bin, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("sandboxbin: the embedded program: %w", err)
	}
	fd, merr := fromMemfd(bin)
	if merr != nil {
		var ferr error
		fd, ferr = fromTempFile(bin)
		if ferr != nil {
			return nil, fmt.Errorf("sandboxbin: cannot place the sandbox program where it can be executed: in memory: %w; in %s: %w", merr, os.TempDir(), ferr)
		}
	}
	high, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, minFD)
	unix.Close(fd)
	if err != nil {
		return nil, fmt.Errorf("sandboxbin: %w", err)
	}
	return os.NewFile(uintptr(high), "codemode-stage"), nil
}

// fromMemfd writes bin to a sealed memory file and returns a read-only
// descriptor of it: with no descriptor open for writing, it can be
// executed.
func fromMemfd(bin []byte) (int, error) {
	const flags = unix.MFD_CLOEXEC | unix.MFD_ALLOW_SEALING
	fd, err := unix.MemfdCreate("codemode-stage", flags|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		// A kernel older than 6.3 knows no MFD_EXEC: its memory files
		// are executable.
		fd, err = unix.MemfdCreate("codemode-stage", flags)
	}
	if err != nil {
		return -1, fmt.Errorf("memfd_create: %w", err)
	}
	defer unix.Close(fd)
	if err := writeAll(fd, bin); err != nil {
		return -1, err
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE); err != nil {
		return -1, fmt.Errorf("seal: %w", err)
	}
	ro, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("reopen read-only: %w", err)
	}
	return ro, nil
}

// fromTempFile writes bin to an executable file in the temporary
// directory, opens it read-only and removes it: the descriptor keeps it.
func fromTempFile(bin []byte) (int, error) {
	f, err := os.CreateTemp("", "codemode-stage-")
	if err != nil {
		return -1, err
	}
	name := f.Name()
	defer func() { _ = os.Remove(name) }() // the descriptor keeps it
	_, err = f.Write(bin)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(name, 0o555)
	}
	if err != nil {
		return -1, err
	}
	return unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
}

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("write: %w", err)
		}
		b = b[n:]
	}
	return nil
}
