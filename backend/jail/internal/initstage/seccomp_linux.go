//go:build linux && amd64

package initstage

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM inside the jail. They either change the
// jail itself (mounts, namespaces), reach into other processes or the
// kernel, or are large attack surface the payload never needs.
var deniedSyscalls = []uint32{
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT,
	unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_PIDFD_GETFD,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_USERFAULTFD, unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT,
	unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK,
	unix.SYS_OPEN_TREE, unix.SYS_OPEN_TREE_ATTR, unix.SYS_MOVE_MOUNT, unix.SYS_MOUNT_SETATTR,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_ACCT, unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT, unix.SYS_SYSLOG,
	unix.SYS_QUOTACTL, unix.SYS_QUOTACTL_FD, unix.SYS_LOOKUP_DCOOKIE,
	unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_ADJTIMEX, unix.SYS_CLOCK_ADJTIME,
	unix.SYS_IOPL, unix.SYS_IOPERM, unix.SYS_VHANGUP, unix.SYS_USELIB,
}

// cloneNewFlags are the namespace-creating clone flags (CLONE_NEWTIME is
// the low 0x80 bit).
const cloneNewFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWTIME

// Offsets into struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // low 32 bits on little-endian
)

const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
)

// filterProgram is the jail's seccomp filter. Any architecture other than
// x86_64 (the i386 int 0x80 entry) and any x32 syscall kill the process;
// the deny list returns EPERM; clone3 returns ENOSYS so that libc falls
// back to clone, whose flags can be inspected; clone with a CLONE_NEW* flag
// and personality other than the default persona return EPERM.
func filterProgram() []bpf.Instruction { return filterFor(false) }

// templateAllowed are the calls of deniedSyscalls that a template process
// (see backend/jail's zygote_linux.go) keeps, because the sessions it
// forks need them to build their own namespaces and mounts before they
// load the full filter. They are denied to every session and its code.
var templateAllowed = map[uint32]bool{unix.SYS_MOUNT: true, unix.SYS_UNSHARE: true}

// filterFor is the filter of a session (template false) or of a template:
// the same, except that the template may unshare, mount and clone new
// namespaces. Filters stack, so a session forked from the template, which
// loads the session filter, has exactly a cold session's.
func filterFor(template bool) []bpf.Instruction {
	p := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AUDIT_ARCH_X86_64, SkipTrue: 1},
		bpf.RetConstant{Val: retKill},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: 0x40000000, SkipFalse: 1},
		bpf.RetConstant{Val: retKill},
	}
	for _, nr := range deniedSyscalls {
		if template && templateAllowed[nr] {
			continue
		}
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1},
			bpf.RetConstant{Val: retEPERM})
	}
	p = append(p,
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CLONE3, SkipFalse: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},

		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_PERSONALITY, SkipFalse: 5},
		bpf.LoadAbsolute{Off: offArg0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0xffffffff, SkipTrue: 2}, // query
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipTrue: 1},          // PER_LINUX
		bpf.RetConstant{Val: retEPERM},
		bpf.RetConstant{Val: retAllow},
	)
	if template {
		return append(p, bpf.RetConstant{Val: retAllow})
	}
	return append(p,
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CLONE, SkipFalse: 3},
		bpf.LoadAbsolute{Off: offArg0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: cloneNewFlags, SkipFalse: 1},
		bpf.RetConstant{Val: retEPERM},
		bpf.RetConstant{Val: retAllow},
	)
}

// FilterBytes is the session filter as the kernel takes it: struct
// sock_filter entries, for a session that loads it itself.
func FilterBytes() ([]byte, error) {
	raw, err := bpf.Assemble(filterProgram())
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

// loadSeccomp installs the filter on every thread of the process (TSYNC).
// The caller must have set no_new_privs.
func loadSeccomp(template bool) error {
	raw, err := bpf.Assemble(filterFor(template))
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
