//go:build linux && amd64

package syscallpolicy

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestSeccompFilterDecisions runs the filter in a BPF interpreter over
// synthetic seccomp_data, including the i386 and x32 entries that this
// machine may not let a live test reach. (x/net/bpf loads words big-endian
// where the kernel loads them in native order, so the synthetic packet is
// written big-endian: the program only ever loads whole 32-bit words.)
func TestSeccompFilterDecisions(t *testing.T) {
	vm, err := bpf.NewVM(Program(false))
	if err != nil {
		t.Fatal(err)
	}
	const auditArchI386 = 0x40000003
	errno := func(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }
	cases := []struct {
		name string
		arch uint32
		nr   uint32
		arg0 uint32
		want uint32
	}{
		{"i386 getpid", auditArchI386, 20, 0, retKill},
		{"i386 unshare", auditArchI386, 310, unix.CLONE_NEWUSER, retKill},
		{"x32 getpid", unix.AUDIT_ARCH_X86_64, 0x40000000 | unix.SYS_GETPID, 0, retKill},
		{"getpid", unix.AUDIT_ARCH_X86_64, unix.SYS_GETPID, 0, retAllow},
		{"unshare", unix.AUDIT_ARCH_X86_64, unix.SYS_UNSHARE, unix.CLONE_NEWUSER, retEPERM},
		{"mount", unix.AUDIT_ARCH_X86_64, unix.SYS_MOUNT, 0, retEPERM},
		{"ptrace", unix.AUDIT_ARCH_X86_64, unix.SYS_PTRACE, 0, retEPERM},
		{"io_uring_setup", unix.AUDIT_ARCH_X86_64, unix.SYS_IO_URING_SETUP, 0, retEPERM},
		{"clone3", unix.AUDIT_ARCH_X86_64, unix.SYS_CLONE3, 0, errno(unix.ENOSYS)},
		{"clone thread", unix.AUDIT_ARCH_X86_64, unix.SYS_CLONE, unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND, retAllow},
		{"clone fork", unix.AUDIT_ARCH_X86_64, unix.SYS_CLONE, uint32(unix.SIGCHLD), retAllow},
		{"clone newuser", unix.AUDIT_ARCH_X86_64, unix.SYS_CLONE, unix.CLONE_NEWUSER | uint32(unix.SIGCHLD), retEPERM},
		{"clone newtime", unix.AUDIT_ARCH_X86_64, unix.SYS_CLONE, unix.CLONE_NEWTIME, retEPERM},
		{"personality query", unix.AUDIT_ARCH_X86_64, unix.SYS_PERSONALITY, 0xffffffff, retAllow},
		{"personality linux", unix.AUDIT_ARCH_X86_64, unix.SYS_PERSONALITY, 0, retAllow},
		{"personality no-aslr", unix.AUDIT_ARCH_X86_64, unix.SYS_PERSONALITY, 0x0040000, retEPERM},
	}
	for _, tc := range cases {
		data := make([]byte, 64)
		binary.BigEndian.PutUint32(data[offNr:], tc.nr)
		binary.BigEndian.PutUint32(data[offArch:], tc.arch)
		binary.BigEndian.PutUint32(data[offArg0:], tc.arg0)
		got, err := vm.Run(data)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if uint32(got) != tc.want {
			t.Errorf("%s: filter returned %#x, want %#x", tc.name, uint32(got), tc.want)
		}
	}
	for _, nr := range deniedSyscalls {
		data := make([]byte, 64)
		binary.BigEndian.PutUint32(data[offNr:], nr)
		binary.BigEndian.PutUint32(data[offArch:], unix.AUDIT_ARCH_X86_64)
		if got, _ := vm.Run(data); uint32(got) != retEPERM {
			t.Errorf("syscall %d: filter returned %#x, want EPERM", nr, uint32(got))
		}
	}
}
