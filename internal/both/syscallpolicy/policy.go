package syscallpolicy

// A Syscall is a system call by its name and its x86_64 number.
type Syscall struct {
	Name string
	Nr   uint32
}

// Errors a refused call returns, as errno values.
const (
	EPERM  uint32 = 1
	ENOSYS uint32 = 38
)

// Denied fail with EPERM. They change the sandbox itself (mounts,
// namespaces, root), reach into other processes or the kernel, or are
// large attack surface that code never needs.
var Denied = []Syscall{
	{"mount", 165}, {"umount2", 166}, {"pivot_root", 155}, {"chroot", 161},
	{"unshare", 272}, {"setns", 308},
	{"ptrace", 101}, {"process_vm_readv", 310}, {"process_vm_writev", 311}, {"pidfd_getfd", 438},
	{"bpf", 321}, {"perf_event_open", 298},
	{"keyctl", 250}, {"add_key", 248}, {"request_key", 249},
	{"kexec_load", 246}, {"kexec_file_load", 320},
	{"init_module", 175}, {"finit_module", 313}, {"delete_module", 176},
	{"userfaultfd", 323}, {"open_by_handle_at", 304}, {"name_to_handle_at", 303},
	{"fsopen", 430}, {"fsconfig", 431}, {"fsmount", 432}, {"fspick", 433},
	{"open_tree", 428}, {"open_tree_attr", 467}, {"move_mount", 429}, {"mount_setattr", 442},
	{"io_uring_setup", 425}, {"io_uring_enter", 426}, {"io_uring_register", 427},
	{"acct", 163}, {"swapon", 167}, {"swapoff", 168}, {"reboot", 169}, {"syslog", 103},
	{"quotactl", 179}, {"quotactl_fd", 443}, {"lookup_dcookie", 212},
	{"settimeofday", 164}, {"clock_settime", 227}, {"adjtimex", 159}, {"clock_adjtime", 305},
	{"iopl", 172}, {"ioperm", 173}, {"vhangup", 153}, {"uselib", 134},
}

// TemplateAllowed are the calls of Denied that the jail's template
// process keeps: the sessions it forks build their own namespaces and
// mounts before they load the full filter. Every session and its code is
// denied them.
var TemplateAllowed = map[string]bool{"mount": true, "unshare": true}

// Clone3 fails with ENOSYS, so that libc falls back to clone, whose flags
// a filter can inspect (clone3 passes them in memory).
var Clone3 = Syscall{"clone3", 435}

// Clone fails with EPERM when its flags (the first argument) hold any of
// CloneNewFlags.
var Clone = Syscall{"clone", 56}

// CloneNewFlags are the namespace-creating clone flags: CLONE_NEWTIME
// (0x80), CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
// CLONE_NEWUSER, CLONE_NEWPID and CLONE_NEWNET.
var CloneNewFlags = []uint32{0x80, 0x20000, 0x2000000, 0x4000000, 0x8000000, 0x10000000, 0x20000000, 0x40000000}

// Personality fails with EPERM unless its argument is PersonalityLinux
// (the default persona) or PersonalityQuery (which reads the persona and
// changes nothing). Other personas turn off address-space randomisation
// or change how the kernel reads the process's memory.
var Personality = Syscall{"personality", 135}

// The persona arguments that personality accepts.
const (
	PersonalityLinux uint32 = 0
	PersonalityQuery uint32 = 0xffffffff
)

// CloneNewMask is CloneNewFlags as one mask.
func CloneNewMask() uint32 {
	var m uint32
	for _, f := range CloneNewFlags {
		m |= f
	}
	return m
}
