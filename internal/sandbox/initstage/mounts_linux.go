//go:build linux && amd64

package initstage

import (
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Mount attributes for read-only binds. Device binds must keep nodev off.
const (
	attrRO  = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	attrDev = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NOEXEC
)

// Small host files copied into the synthesized /etc when present.
var etcCopies = []string{"ld.so.cache", "localtime", "timezone", "protocols", "services", "mime.types"}

// Host directories under /etc bound read-only when present (certificates;
// the alternatives symlinks that some /usr/bin entries point through).
var etcBinds = []string{"/etc/ssl", "/etc/ca-certificates", "/etc/alternatives"}

// Top-level names that merged-usr hosts make symlinks into /usr.
var usrLinks = []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"}

var devNodes = []string{"null", "zero", "full", "random", "urandom"}

// rootCandidates are host directories that may carry the new root's tmpfs in
// the jail's private mount namespace (nothing is visible to the host).
var rootCandidates = []string{"/tmp", "/mnt", "/var/tmp", "/run", "/dev"}

// bindSrc is a detached mount tree waiting to be attached.
type bindSrc struct {
	target string
	fd     int
	attr   uint64
}

// buildRoot assembles the jail's filesystem and pivots into it. It runs as
// inside-root in the jail's fresh user and mount namespaces.
func buildRoot(c *Config) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return stepErr("make / private", err)
	}

	// Clone every bind source while the host tree is still visible.
	var binds []bindSrc
	clone := func(src, target string, attr uint64) error {
		fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			if err == unix.ENOSYS {
				return fmt.Errorf("%w (open_tree: %w)", errUnsupported, err)
			}
			return stepErr("clone "+src, err)
		}
		binds = append(binds, bindSrc{target: target, fd: fd, attr: attr})
		return nil
	}
	if err := clone("/usr", "/usr", attrRO); err != nil {
		return err
	}
	var links [][2]string // name -> link target
	for _, name := range usrLinks {
		p := "/" + name
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return stepErr("read link "+p, err)
			}
			links = append(links, [2]string{name, t})
		case fi.IsDir(): // not merged-usr: bind the real directory
			if err := clone(p, p, attrRO); err != nil {
				return err
			}
		}
	}
	for _, d := range etcBinds {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			if err := clone(d, d, attrRO); err != nil {
				return err
			}
		}
	}
	etc := map[string][]byte{}
	etcLinks := map[string]string{}
	for _, name := range etcCopies {
		p := "/etc/" + name
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if t, err := os.Readlink(p); err == nil {
				etcLinks[name] = t
			}
			continue
		}
		if data, err := os.ReadFile(p); err == nil && len(data) < 8<<20 {
			etc[name] = data
		}
	}
	for _, d := range devNodes {
		if err := clone("/dev/"+d, "/dev/"+d, attrDev); err != nil {
			return err
		}
	}
	for _, t := range c.Trees {
		if t.FD > 0 {
			binds = append(binds, bindSrc{target: t.Target, fd: t.FD, attr: attrRO})
		} else if err := clone(t.Target, t.Target, attrRO); err != nil {
			return err
		}
	}

	// The new root: a small tmpfs, read-only once populated.
	root := ""
	for _, d := range rootCandidates {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			root = d
			break
		}
	}
	if root == "" {
		return stepErr("find a mount point for the new root", unix.ENOENT)
	}
	if err := mountTmpfs(root, "new root", "mode=0755,size=16m", 0); err != nil {
		return err
	}
	at := func(p string) string { return path.Join(root, p) }
	for _, d := range []string{"usr", "etc", "dev", "proc", "tmp", "workspace", "codemode"} {
		if err := os.Mkdir(at(d), 0o755); err != nil {
			return stepErr("create /"+d, err)
		}
	}
	for _, l := range links {
		if err := os.Symlink(l[1], at(l[0])); err != nil {
			return stepErr("create /"+l[0], err)
		}
	}
	if err := writeEtc(at("etc"), c, etc, etcLinks); err != nil {
		return err
	}

	// /dev: tmpfs with bound device nodes, /dev/shm, and /proc symlinks.
	if err := mountTmpfs(at("dev"), "/dev", "mode=0755,size=64k", unix.MS_NOEXEC); err != nil {
		return err
	}
	for _, d := range devNodes {
		if err := os.WriteFile(at("dev/"+d), nil, 0o666); err != nil {
			return stepErr("create /dev/"+d, err)
		}
	}
	for name, t := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(t, at("dev/"+name)); err != nil {
			return stepErr("create /dev/"+name, err)
		}
	}
	if err := os.Mkdir(at("dev/shm"), 0o755); err != nil {
		return stepErr("create /dev/shm", err)
	}
	if err := mountTmpfs(at("dev/shm"), "/dev/shm", fmt.Sprintf("mode=1777,size=%d", c.TmpBytes), 0); err != nil {
		return err
	}

	if err := mountTmpfs(at("tmp"), "/tmp", fmt.Sprintf("mode=1777,size=%d", c.TmpBytes), 0); err != nil {
		return err
	}
	if err := mountTmpfs(at("workspace"), "/workspace", fmt.Sprintf("mode=0755,uid=%d,gid=%d,size=%d",
		c.PayloadUID, c.PayloadGID, c.WorkspaceBytes), 0); err != nil {
		return err
	}
	if len(c.Files) > 0 {
		if err := writeFiles(at("codemode"), c); err != nil {
			return err
		}
	}

	// Attach the cloned trees, shallowest first, then make them read-only.
	sort.SliceStable(binds, func(i, j int) bool {
		return strings.Count(binds[i].target, "/") < strings.Count(binds[j].target, "/")
	})
	for _, b := range binds {
		dst := at(b.target)
		if err := makeMountPoint(root, b.target); err != nil {
			return err
		}
		if err := unix.MoveMount(b.fd, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return stepErr("attach "+b.target, err)
		}
		unix.Close(b.fd)
		if err := setattr(dst, b.attr, true); err != nil {
			return stepErr("mount "+b.target+" read-only", err)
		}
	}
	if err := setattr(at("dev"), unix.MOUNT_ATTR_RDONLY, false); err != nil {
		return stepErr("mount /dev read-only", err)
	}

	// A fresh procfs must be mounted while the host's procfs is still visible.
	if err := unix.Mount("proc", at("proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return stepErr("mount /proc", err)
	}

	// pivot_root(".", ".") stacks the old root on top of the new one; the
	// detach then removes every host mount from this namespace.
	if err := unix.Chdir(root); err != nil {
		return stepErr("chdir to the new root", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return stepErr("pivot_root", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return stepErr("detach the host root", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return stepErr("chdir /", err)
	}
	if err := setattr("/", unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, false); err != nil {
		return stepErr("remount / read-only", err)
	}
	return nil
}

func mountTmpfs(dst, name, opts string, flags uintptr) error {
	if err := unix.Mount("tmpfs", dst, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|flags, opts); err != nil {
		return stepErr("mount tmpfs "+name, err)
	}
	return nil
}

// setattr applies mount attributes with mount_setattr. Where the kernel
// lacks it (before 5.12), a non-recursive read-only remount that keeps the
// existing (possibly locked) flags is the fallback.
func setattr(p string, attr uint64, recursive bool) error {
	var flags uint
	if recursive {
		flags = unix.AT_RECURSIVE
	}
	err := unix.MountSetattr(unix.AT_FDCWD, p, flags, &unix.MountAttr{Attr_set: attr})
	if err != unix.ENOSYS {
		return err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return err
	}
	keep := uintptr(st.Flags) & (unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME |
		unix.MS_NODIRATIME | unix.MS_RELATIME)
	if attr&unix.MOUNT_ATTR_RDONLY != 0 {
		keep |= unix.MS_RDONLY
	}
	if attr&unix.MOUNT_ATTR_NOSUID != 0 {
		keep |= unix.MS_NOSUID
	}
	if attr&unix.MOUNT_ATTR_NODEV != 0 {
		keep |= unix.MS_NODEV
	}
	if attr&unix.MOUNT_ATTR_NOEXEC != 0 {
		keep |= unix.MS_NOEXEC
	}
	return unix.Mount("", p, "", unix.MS_BIND|unix.MS_REMOUNT|keep, "")
}

// makeMountPoint creates the file or directory at target (inside root) that
// a bind of the same kind as the host's target needs.
func makeMountPoint(root, target string) error {
	dst := path.Join(root, target)
	if _, err := os.Lstat(dst); err == nil {
		return nil
	}
	if err := os.MkdirAll(path.Dir(dst), 0o755); err != nil {
		return stepErr("create parents of "+target, err)
	}
	if fi, err := os.Stat(target); err == nil && !fi.IsDir() {
		return stepErr("create "+target, os.WriteFile(dst, nil, 0o444))
	}
	return stepErr("create "+target, os.Mkdir(dst, 0o755))
}

// writeEtc synthesizes /etc: accounts for the sandbox user, hosts, and
// copies of small host files.
func writeEtc(dir string, c *Config, copies map[string][]byte, links map[string]string) error {
	files := map[string]string{
		"passwd": fmt.Sprintf("root:x:0:0:root:/workspace:/usr/sbin/nologin\n"+
			"sandbox:x:%d:%d:sandbox:/workspace:/usr/sbin/nologin\n"+
			"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", PayloadID, PayloadID),
		"group":         fmt.Sprintf("root:x:0:\nsandbox:x:%d:\nnogroup:x:65534:\n", PayloadID),
		"hosts":         "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n",
		"hostname":      "sandbox\n",
		"nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files\nnetworks: files\nprotocols: files\nservices: files\n",
		"resolv.conf":   "",
	}
	for name, data := range files {
		if err := os.WriteFile(path.Join(dir, name), []byte(data), 0o644); err != nil {
			return stepErr("write /etc/"+name, err)
		}
	}
	for name, data := range copies {
		if err := os.WriteFile(path.Join(dir, name), data, 0o644); err != nil {
			return stepErr("write /etc/"+name, err)
		}
	}
	for name, t := range links {
		if err := os.Symlink(t, path.Join(dir, name)); err != nil {
			return stepErr("write /etc/"+name, err)
		}
	}
	return nil
}

// writeFiles fills /codemode from Config.Files on a tmpfs sized to fit,
// then makes it read-only.
func writeFiles(dir string, c *Config) error {
	size := c.FilesBytes + int64(len(c.Files))*8192 + 1<<20
	if err := mountTmpfs(dir, "/codemode", fmt.Sprintf("mode=0755,size=%d", size), 0); err != nil {
		return err
	}
	for name, data := range c.Files {
		p := path.Join(dir, path.Clean(name))
		if err := os.MkdirAll(path.Dir(p), 0o755); err != nil {
			return stepErr("create /codemode/"+path.Dir(name), err)
		}
		if err := os.WriteFile(p, data, 0o444); err != nil {
			return stepErr("write /codemode/"+name, err)
		}
	}
	return stepErr("mount /codemode read-only", setattr(dir, attrRO, false))
}
