//go:build linux && amd64

package syscallpolicy_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/internal/both/syscallpolicy"
)

// TestNumbersMatchTheKernelTable holds every number of the policy, which
// the package states without imports, to golang.org/x/sys/unix's tables.
func TestNumbersMatchTheKernelTable(t *testing.T) {
	want := map[string]uint32{
		"mount": unix.SYS_MOUNT, "umount2": unix.SYS_UMOUNT2, "pivot_root": unix.SYS_PIVOT_ROOT, "chroot": unix.SYS_CHROOT,
		"unshare": unix.SYS_UNSHARE, "setns": unix.SYS_SETNS,
		"ptrace": unix.SYS_PTRACE, "process_vm_readv": unix.SYS_PROCESS_VM_READV, "process_vm_writev": unix.SYS_PROCESS_VM_WRITEV,
		"pidfd_getfd": unix.SYS_PIDFD_GETFD, "bpf": unix.SYS_BPF, "perf_event_open": unix.SYS_PERF_EVENT_OPEN,
		"keyctl": unix.SYS_KEYCTL, "add_key": unix.SYS_ADD_KEY, "request_key": unix.SYS_REQUEST_KEY,
		"kexec_load": unix.SYS_KEXEC_LOAD, "kexec_file_load": unix.SYS_KEXEC_FILE_LOAD,
		"init_module": unix.SYS_INIT_MODULE, "finit_module": unix.SYS_FINIT_MODULE, "delete_module": unix.SYS_DELETE_MODULE,
		"userfaultfd": unix.SYS_USERFAULTFD, "open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT, "name_to_handle_at": unix.SYS_NAME_TO_HANDLE_AT,
		"fsopen": unix.SYS_FSOPEN, "fsconfig": unix.SYS_FSCONFIG, "fsmount": unix.SYS_FSMOUNT, "fspick": unix.SYS_FSPICK,
		"open_tree": unix.SYS_OPEN_TREE, "open_tree_attr": unix.SYS_OPEN_TREE_ATTR, "move_mount": unix.SYS_MOVE_MOUNT,
		"mount_setattr":  unix.SYS_MOUNT_SETATTR,
		"io_uring_setup": unix.SYS_IO_URING_SETUP, "io_uring_enter": unix.SYS_IO_URING_ENTER, "io_uring_register": unix.SYS_IO_URING_REGISTER,
		"acct": unix.SYS_ACCT, "swapon": unix.SYS_SWAPON, "swapoff": unix.SYS_SWAPOFF, "reboot": unix.SYS_REBOOT, "syslog": unix.SYS_SYSLOG,
		"quotactl": unix.SYS_QUOTACTL, "quotactl_fd": unix.SYS_QUOTACTL_FD, "lookup_dcookie": unix.SYS_LOOKUP_DCOOKIE,
		"settimeofday": unix.SYS_SETTIMEOFDAY, "clock_settime": unix.SYS_CLOCK_SETTIME, "adjtimex": unix.SYS_ADJTIMEX,
		"clock_adjtime": unix.SYS_CLOCK_ADJTIME, "iopl": unix.SYS_IOPL, "ioperm": unix.SYS_IOPERM, "vhangup": unix.SYS_VHANGUP,
		"uselib": unix.SYS_USELIB,
		"clone3": unix.SYS_CLONE3, "clone": unix.SYS_CLONE, "personality": unix.SYS_PERSONALITY,
	}
	all := append([]syscallpolicy.Syscall{syscallpolicy.Clone3, syscallpolicy.Clone, syscallpolicy.Personality}, syscallpolicy.Denied...)
	seen := map[string]bool{}
	for _, s := range all {
		w, ok := want[s.Name]
		if !ok {
			t.Errorf("%s: not in this test's table; add it", s.Name)
			continue
		}
		if s.Nr != uint32(w) {
			t.Errorf("%s is %d in the policy, %d in the kernel's table", s.Name, s.Nr, w)
		}
		if seen[s.Name] {
			t.Errorf("%s is listed twice", s.Name)
		}
		seen[s.Name] = true
	}
	for name := range syscallpolicy.TemplateAllowed {
		if !seen[name] {
			t.Errorf("the template keeps %s, which the policy does not deny", name)
		}
	}
	mask := uint32(unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
		unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWTIME)
	if got := syscallpolicy.CloneNewMask(); got != mask {
		t.Errorf("CloneNewMask = %#x, want %#x", got, mask)
	}
	if syscallpolicy.EPERM != uint32(unix.EPERM) || syscallpolicy.ENOSYS != uint32(unix.ENOSYS) {
		t.Error("an errno differs from the kernel's")
	}
}
