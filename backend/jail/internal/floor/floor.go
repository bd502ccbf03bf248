//go:build linux

package floor

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// Init runs as pid 1 of fresh user, mount and pid namespaces (and any
// others), as root of its user namespace: it puts a tmpfs root with /usr
// bound read-only and a procfs in place, pivots into it and execs args,
// which must live under /usr. It does not return; a failure exits 126
// with the step on stderr.
func Init(args []string) {
	fail := func(step string, err error) {
		fmt.Fprintf(os.Stderr, "floor: %s: %v\n", step, err)
		os.Exit(126)
	}
	if len(args) == 0 {
		fail("args", unix.EINVAL)
	}
	const root = "/tmp"
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		fail("make / private", err)
	}
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m"); err != nil {
		fail("root tmpfs", err)
	}
	for _, d := range []string{"usr", "proc", ".old"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			fail("mkdir "+d, err)
		}
	}
	for _, l := range []string{"bin", "lib", "lib64"} {
		if err := os.Symlink("usr/"+l, filepath.Join(root, l)); err != nil {
			fail("symlink "+l, err)
		}
	}
	if err := unix.Mount("/usr", root+"/usr", "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		fail("bind /usr", err)
	}
	if err := unix.Mount("", root+"/usr", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		fail("read-only /usr", err)
	}
	if err := unix.Mount("proc", root+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		fail("procfs", err)
	}
	if err := unix.PivotRoot(root, root+"/.old"); err != nil {
		fail("pivot_root", err)
	}
	if err := unix.Chdir("/"); err != nil {
		fail("chdir", err)
	}
	if err := unix.Unmount("/.old", unix.MNT_DETACH); err != nil {
		fail("detach the old root", err)
	}
	err := syscall.Exec(args[0], args, []string{"PATH=/usr/bin:/bin"})
	fail("exec "+args[0], err)
}
