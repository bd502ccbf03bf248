//go:build linux

package supervisor

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/internal/both/clip"
)

// Tracker finds the regular files that a block created or changed in the
// workspace. It watches the workspace with inotify, one watch per
// directory, so that after a block it looks only at the paths the kernel
// reported, confirming each with a stat that follows no symlink: the cost
// grows with what changed, not with the size of the workspace. It falls
// back to walking the whole workspace and comparing what stat says with
// the last walk when inotify is unavailable, when the event queue
// overflowed, when a directory was renamed, and for good once the
// workspace has more directories than maxWatches.
//
// A Tracker is used by one goroutine.
type Tracker struct {
	root  string
	max   int                  // entries examined by one walk
	state map[string]fileStamp // the regular single-link files as last seen

	in      int              // inotify descriptor; -1 when walking instead
	wds     map[int32]string // watch → directory, relative ("" for the root)
	dirs    map[string]int32 // directory → watch
	pending map[string]bool  // paths reported since the last call
	rescan  bool             // the events cannot be trusted: walk
	buf     []byte           // event buffer
	cleanup runtime.Cleanup  // closes in when the tracker is dropped
}

type fileStamp struct {
	size, mtime, ctime int64
	ino                uint64
}

// maxWatches bounds the directories watched; a larger workspace is walked.
const maxWatches = 16384

// watchMask is what the watches report: everything that can create,
// change, replace or remove a file, and a directory's own removal or move.
const watchMask = unix.IN_CREATE | unix.IN_CLOSE_WRITE | unix.IN_MODIFY | unix.IN_ATTRIB |
	unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_DELETE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

func newTracker(root string, max int) *Tracker {
	t := &Tracker{root: root, max: max, state: map[string]fileStamp{}, in: -1}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err == nil {
		t.in = fd
		t.cleanup = runtime.AddCleanup(t, func(fd int) { unix.Close(fd) }, fd)
		t.buf = make([]byte, 64<<10)
	}
	return t
}

// Close releases the inotify descriptor.
func (t *Tracker) Close() { t.stopWatching() }

// Watching reports whether the tracker learns of changes from inotify
// alone: then, while its descriptor has no event queued, nothing changed.
func (t *Tracker) Watching() bool { return t.in >= 0 && !t.rescan }

// sendWatch sends the host a files message with the inotify descriptor,
// which the host polls to skip asking when nothing changed.
func (t *Tracker) sendWatch(c *Conn) error {
	fd, err := unix.FcntlInt(uintptr(t.in), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return c.Send(Msg{Op: "files"})
	}
	f := os.NewFile(uintptr(fd), "inotify")
	defer f.Close()
	return c.Send(Msg{Op: "files", Watching: true}, f)
}

// Baseline records the workspace as it is now, and watches it.
func (t *Tracker) Baseline() {
	t.drain()
	t.state = t.walk()
	t.pending, t.rescan = nil, false
}

// Changed returns the files that are new or changed since the last call,
// sorted by path. Symlinks, devices, FIFOs, sockets and files with more
// than one hard link are never listed.
func (t *Tracker) Changed() []FileInfo {
	t.drain()
	var out []FileInfo
	if t.in < 0 || t.rescan {
		now := t.walk()
		for p, st := range now {
			if old, ok := t.state[p]; !ok || old != st {
				out = append(out, FileInfo{Path: p, Size: st.size})
			}
		}
		t.state = now
	} else {
		for p := range t.pending {
			st, ok := t.stat(p)
			if !ok {
				delete(t.state, p)
				continue
			}
			if old, seen := t.state[p]; !seen || old != st {
				out = append(out, FileInfo{Path: p, Size: st.size})
			}
			t.state[p] = st
		}
	}
	t.pending, t.rescan = nil, false
	// What the host would refuse is not listed: a path longer than a
	// message may carry, and entries past max (the first max by name
	// stay).
	out = slices.DeleteFunc(out, func(f FileInfo) bool { return len(f.Path) > MaxPath })
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	if len(out) > t.max {
		out = out[:t.max]
	}
	return out
}

// drain reads every queued event, noting the paths they name and watching
// new directories.
func (t *Tracker) drain() {
	if t.in < 0 {
		return
	}
	var newDirs []string
	for {
		n, err := unix.Read(t.in, t.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			break // EAGAIN: the queue is empty
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&t.buf[off]))
			nameBytes := t.buf[off+unix.SizeofInotifyEvent : min(n, off+unix.SizeofInotifyEvent+int(ev.Len))]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			name := string(bytes.TrimRight(nameBytes, "\x00"))
			switch {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				t.rescan = true
				continue
			case ev.Mask&unix.IN_IGNORED != 0:
				if dir, ok := t.wds[ev.Wd]; ok {
					delete(t.wds, ev.Wd)
					if t.dirs[dir] == ev.Wd {
						delete(t.dirs, dir)
					}
				}
				continue
			}
			dir, ok := t.wds[ev.Wd]
			if !ok {
				continue // a watch dropped by a walk
			}
			if ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
				if ev.Mask&unix.IN_MOVE_SELF != 0 && dir != "" {
					t.rescan = true // the paths under it are stale
				}
				continue
			}
			if name == "" {
				continue
			}
			rel := path.Join(dir, name)
			if ev.Mask&unix.IN_ISDIR != 0 {
				switch {
				case ev.Mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
					newDirs = append(newDirs, rel)
				case ev.Mask&unix.IN_MOVED_FROM != 0:
					t.rescan = true
				}
				continue
			}
			if t.pending == nil {
				t.pending = map[string]bool{}
			}
			t.pending[rel] = true
		}
	}
	if t.rescan {
		return
	}
	// Watch each new directory before listing it, so that nothing written
	// in it is missed; what it holds already is reported as new.
	for _, d := range newDirs {
		t.addTree(d)
		if t.rescan {
			return
		}
	}
}

// addTree watches dir and the directories under it, and notes the files
// in them.
func (t *Tracker) addTree(rel string) {
	stack := []string{rel}
	seen := 0
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !t.watch(d) {
			return
		}
		ents, err := os.ReadDir(path.Join(t.root, d))
		if err != nil {
			continue
		}
		for _, e := range ents {
			if seen++; seen > t.max {
				t.rescan = true
				return
			}
			p := path.Join(d, e.Name())
			switch {
			case e.IsDir():
				stack = append(stack, p)
			case e.Type().IsRegular():
				if t.pending == nil {
					t.pending = map[string]bool{}
				}
				t.pending[p] = true
			}
		}
	}
}

// watch adds a watch on the directory rel. It reports false, and the
// tracker walks from then on, when the watch cannot be added.
func (t *Tracker) watch(rel string) bool {
	if t.in < 0 {
		return false
	}
	if len(t.wds) >= maxWatches {
		t.stopWatching()
		return false
	}
	wd, err := unix.InotifyAddWatch(t.in, path.Join(t.root, rel), watchMask)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			return true // gone or replaced since: nothing to watch
		}
		t.stopWatching() // ENOSPC (the user's watch limit) or worse
		return false
	}
	if old, ok := t.wds[int32(wd)]; ok && old != rel {
		delete(t.dirs, old)
	}
	t.wds[int32(wd)] = rel
	t.dirs[rel] = int32(wd)
	return true
}

// stopWatching gives up on inotify: every later call walks.
func (t *Tracker) stopWatching() {
	if t.in >= 0 {
		t.cleanup.Stop()
		unix.Close(t.in)
		t.in = -1
	}
	t.wds, t.dirs, t.pending = nil, nil, nil
	t.rescan = true
}

// stat stamps the workspace file rel if it is a regular file with one link
// reached without following a symlink.
func (t *Tracker) stat(rel string) (fileStamp, bool) {
	dir, err := unix.Open(t.root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fileStamp{}, false
	}
	defer unix.Close(dir)
	fd, err := unix.Openat2(dir, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	})
	if errors.Is(err, unix.ENOSYS) {
		fd, err = pathBeneath(dir, rel)
	}
	if err != nil {
		return fileStamp{}, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		return fileStamp{}, false
	}
	return fileStamp{size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), ino: st.Ino}, true
}

// pathBeneath is stat's fallback for kernels without openat2: an O_PATH
// descriptor reached one component at a time without following symlinks.
func pathBeneath(dir int, rel string) (int, error) { return walkBeneath(dir, rel, unix.O_PATH) }

// walk stamps every regular single-link file in the workspace, examining
// at most max entries, and, while watching, re-watches every directory.
// It visits the tree depth first in lexical order, as filepath.WalkDir
// does, and follows no symlink.
func (t *Tracker) walk() map[string]fileStamp {
	if t.in >= 0 {
		t.wds, t.dirs = map[int32]string{}, map[string]int32{}
	}
	out := make(map[string]fileStamp)
	seen := 0
	var visit func(rel string) bool // false: stop, max entries seen
	visit = func(rel string) bool {
		t.watch(rel)
		// What an unreadable directory gave before its error counts.
		ents, _ := os.ReadDir(path.Join(t.root, rel))
		for _, e := range ents {
			if seen++; seen > t.max {
				return false
			}
			p := path.Join(rel, e.Name())
			if e.IsDir() {
				if !visit(p) {
					return false
				}
				continue
			}
			if !e.Type().IsRegular() {
				continue // a DirEntry's type is never a symlink's target
			}
			info, err := e.Info()
			if err != nil {
				continue
			}
			st, ok := info.Sys().(*syscall.Stat_t)
			if !ok || st.Nlink != 1 {
				continue
			}
			out[p] = fileStamp{size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), ino: st.Ino}
		}
		return true
	}
	if fi, err := os.Lstat(t.root); err == nil && fi.IsDir() {
		seen++ // the root counts, as WalkDir's first entry
		if seen <= t.max {
			visit("")
		}
	}
	return out
}

// Read returns a workspace file's content. The path must be relative and
// clean, every component must be a real directory (no symlinks), and the
// file must be a regular file with one link and at most max bytes.
func (t *Tracker) Read(rel string, max int64) ([]byte, error) {
	if rel == "" || strings.HasPrefix(rel, "/") || path.Clean(rel) != rel || rel == "." || strings.HasPrefix(rel, "../") || rel == ".." || strings.ContainsRune(rel, 0) {
		return nil, fmt.Errorf("invalid path %q: give a clean path relative to the workspace", clip.String(rel, 200))
	}
	dir, err := unix.Open(t.root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	defer unix.Close(dir)
	fd, err := unix.Openat2(dir, rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	})
	if errors.Is(err, unix.ENOSYS) {
		fd, err = openBeneath(dir, rel)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", rel, err)
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s is not a regular file", rel)
	}
	if st.Nlink != 1 {
		return nil, fmt.Errorf("%s has %d hard links; only files with one link are sent", rel, st.Nlink)
	}
	if st.Size > max {
		return nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit", rel, st.Size, max)
	}
	return io.ReadAll(io.LimitReader(f, max+1))
}

// openBeneath is read's fallback for kernels without openat2: the file
// opened for reading, reached one component at a time without following
// symlinks.
func openBeneath(dir int, rel string) (int, error) {
	return walkBeneath(dir, rel, unix.O_RDONLY|unix.O_NONBLOCK)
}

// walkBeneath opens rel under dir one component at a time, never following
// a symlink: directories with O_PATH, the last component with last.
func walkBeneath(dir int, rel string, last int) (int, error) {
	parts := strings.Split(rel, "/")
	cur, err := unix.Dup(dir)
	if err != nil {
		return -1, err
	}
	for i, p := range parts {
		flags := unix.O_NOFOLLOW | unix.O_CLOEXEC | last
		if i < len(parts)-1 {
			flags = unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_PATH | unix.O_DIRECTORY
		}
		next, err := unix.Openat(cur, p, flags, 0)
		unix.Close(cur)
		if err != nil {
			return -1, err
		}
		cur = next
	}
	return cur, nil
}
