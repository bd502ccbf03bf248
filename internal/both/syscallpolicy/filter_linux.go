//go:build linux && amd64

package syscallpolicy

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls are the numbers of Denied.
var deniedSyscalls = func() []uint32 {
	out := make([]uint32, len(Denied))
	for i, s := range Denied {
		out[i] = s.Nr
	}
	return out
}()

// cloneNewFlags are the namespace-creating clone flags.
var cloneNewFlags = CloneNewMask()

// Offsets into struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // low 32 bits on little-endian
)

const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
	retEPERM = unix.SECCOMP_RET_ERRNO | EPERM
)

// templateAllowed reports whether the jail's template process keeps the
// denied call nr (TemplateAllowed).
func templateAllowed(nr uint32) bool {
	for _, s := range Denied {
		if s.Nr == nr {
			return TemplateAllowed[s.Name]
		}
	}
	return false
}

// Program is the policy as a seccomp filter, for a session (template
// false) or for the jail's template process. Any architecture other than
// x86_64 (the i386 int 0x80 entry) and any x32 syscall kill the process;
// the deny list returns EPERM; clone3 returns ENOSYS so that libc falls
// back to clone, whose flags can be inspected; clone with a CLONE_NEW* flag
// and personality other than the default persona return EPERM.
//
// The template's is the same, except that it may unshare, mount and clone
// new namespaces. Filters stack, so a session forked from the template,
// which loads the session filter, has exactly a cold session's.
func Program(template bool) []bpf.Instruction {
	p := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AUDIT_ARCH_X86_64, SkipTrue: 1},
		bpf.RetConstant{Val: retKill},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: 0x40000000, SkipFalse: 1},
		bpf.RetConstant{Val: retKill},
	}
	for _, nr := range deniedSyscalls {
		if template && templateAllowed(nr) {
			continue
		}
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1},
			bpf.RetConstant{Val: retEPERM})
	}
	p = append(p,
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: Clone3.Nr, SkipFalse: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | ENOSYS},

		bpf.JumpIf{Cond: bpf.JumpEqual, Val: Personality.Nr, SkipFalse: 5},
		bpf.LoadAbsolute{Off: offArg0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: PersonalityQuery, SkipTrue: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: PersonalityLinux, SkipTrue: 1},
		bpf.RetConstant{Val: retEPERM},
		bpf.RetConstant{Val: retAllow},
	)
	if template {
		return append(p, bpf.RetConstant{Val: retAllow})
	}
	return append(p,
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: Clone.Nr, SkipFalse: 3},
		bpf.LoadAbsolute{Off: offArg0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: cloneNewFlags, SkipFalse: 1},
		bpf.RetConstant{Val: retEPERM},
		bpf.RetConstant{Val: retAllow},
	)
}

// FilterBytes is Program(template) as the kernel takes it: struct
// sock_filter entries, for a jail's setup plan to load.
func FilterBytes(template bool) ([]byte, error) {
	raw, err := bpf.Assemble(Program(template))
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, 8*len(raw))
	for _, in := range raw {
		out = binary.LittleEndian.AppendUint16(out, in.Op)
		out = append(out, in.Jt, in.Jf)
		out = binary.LittleEndian.AppendUint32(out, in.K)
	}
	return out, nil
}

// Install loads Program(template) on every thread of the process (TSYNC).
// The caller must have set no_new_privs.
func Install(template bool) error {
	raw, err := bpf.Assemble(Program(template))
	if err != nil {
		return fmt.Errorf("assemble: %w", err)
	}
	filt := make([]unix.SockFilter, len(raw))
	for i, in := range raw {
		filt[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filt)), Filter: &filt[0]}
	r, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return errno
	}
	if r != 0 {
		return fmt.Errorf("thread %d could not be synchronised", r)
	}
	return nil
}
