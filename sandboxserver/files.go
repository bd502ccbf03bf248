package sandboxserver

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/transport"
)

// tracker finds the regular files that a block created or changed in the
// workspace, by comparing what stat says before and after.
type tracker struct {
	root  string
	max   int
	state map[string]fileStamp
}

type fileStamp struct {
	size, mtime, ctime int64
	ino                uint64
}

func newTracker(root string, max int) *tracker {
	return &tracker{root: root, max: max, state: map[string]fileStamp{}}
}

func (t *tracker) baseline() { t.state = t.scan() }

// changed returns the files that are new or changed since the last call,
// sorted by path. Symlinks, devices, FIFOs, sockets and files with more
// than one hard link are never listed.
func (t *tracker) changed() []transport.FileInfo {
	now := t.scan()
	var out []transport.FileInfo
	for p, st := range now {
		if old, ok := t.state[p]; !ok || old != st {
			out = append(out, transport.FileInfo{Path: p, Size: st.size})
		}
	}
	t.state = now
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func (t *tracker) scan() map[string]fileStamp {
	out := make(map[string]fileStamp)
	seen := 0
	_ = filepath.WalkDir(t.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: skip
		}
		seen++
		if seen > t.max {
			return filepath.SkipAll
		}
		if !d.Type().IsRegular() {
			return nil // WalkDir never follows symlinks
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok || st.Nlink != 1 {
			return nil
		}
		rel, err := filepath.Rel(t.root, p)
		if err != nil {
			return nil
		}
		out[filepath.ToSlash(rel)] = fileStamp{size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), ino: st.Ino}
		return nil
	})
	return out
}

// read returns a workspace file's content. The path must be relative and
// clean, every component must be a real directory (no symlinks), and the
// file must be a regular file with one link and at most max bytes.
func (t *tracker) read(rel string, max int64) ([]byte, error) {
	if rel == "" || strings.HasPrefix(rel, "/") || path.Clean(rel) != rel || rel == "." || strings.HasPrefix(rel, "../") || rel == ".." || strings.ContainsRune(rel, 0) {
		return nil, fmt.Errorf("invalid path %q: give a clean path relative to the workspace", truncate(rel, 200))
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

// openBeneath is the fallback for kernels without openat2: it walks the
// path one component at a time without following symlinks.
func openBeneath(dir int, rel string) (int, error) {
	parts := strings.Split(rel, "/")
	cur, err := unix.Dup(dir)
	if err != nil {
		return -1, err
	}
	for i, p := range parts {
		flags := unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i < len(parts)-1 {
			flags |= unix.O_PATH | unix.O_DIRECTORY
		} else {
			flags |= unix.O_RDONLY | unix.O_NONBLOCK
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
