//go:build linux

package jailplan

import (
	"fmt"
	"runtime"
	"slices"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Run executes p in this process, in order, and returns the results of
// the steps that report one. It stops at the first step that fails, with
// an [*Error]. Per-thread state (capabilities, no_new_privs, securebits,
// PDEATHSIG) is set on the calling thread only, except by steps marked
// AllThreads: the caller must be locked to its thread, the one that later
// forks or execs the payload.
func (p *Plan) Run() (map[string]int64, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	bufs := make([][]byte, len(p.Bufs))
	for i, b := range p.Bufs {
		// At least one word, so that every buffer has an address, and
		// allocated by the runtime, which aligns it to eight bytes.
		bufs[i] = make([]byte, max(len(b.Data), pointerBytes))
		copy(bufs[i], b.Data)
	}
	for i, b := range p.Bufs {
		for _, ptr := range b.Ptrs {
			*(*uintptr)(unsafe.Pointer(&bufs[i][ptr.Off])) = uintptr(unsafe.Pointer(&bufs[ptr.Buf][0]))
		}
	}
	results := make([]int64, len(p.Steps))
	reports := map[string]int64{}
	for i, s := range p.Steps {
		var a [maxArgs]uintptr
		for j, arg := range s.Args {
			switch arg.kind {
			case argBuf:
				a[j] = uintptr(unsafe.Pointer(&bufs[arg.v][0]))
			case argResult:
				a[j] = uintptr(results[arg.v])
			default:
				a[j] = uintptr(arg.v)
			}
		}
		r, errno := call(s, a)
		if errno != 0 {
			if !slices.Contains(s.Allow, int(errno)) {
				return reports, &Error{Op: s.Op, Errno: int(errno), Msg: errno.Error()}
			}
			r = -int64(errno)
		} else if s.Want != nil && r != *s.Want {
			return reports, &Error{Op: s.Op, Msg: fmt.Sprintf("returned %d, want %d", r, *s.Want)}
		}
		results[i] = r
		if s.Report != "" {
			reports[s.Report] = r
		}
	}
	runtime.KeepAlive(bufs)
	return reports, nil
}

func call(s Step, a [maxArgs]uintptr) (int64, syscall.Errno) {
	nr := uintptr(s.NR)
	if s.AllThreads {
		// A runtime with cgo cannot make the call on every thread
		// (ENOTSUP): it fails, rather than leave other threads with the
		// ids or capabilities the step takes away.
		r, _, errno := syscall.AllThreadsSyscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
		return int64(r), errno
	}
	r, _, errno := unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
	return int64(r), errno
}
