//go:build linux

package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

func paths(files []FileInfo) []string {
	out := []string{}
	for _, f := range files {
		out = append(out, f.Path)
	}
	return out
}

func write(t testing.TB, root, rel, data string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// trackerModes runs f with a watching tracker and with a walking one; both
// must give the same answers.
func trackerModes(t *testing.T, f func(t *testing.T, root string, tr *Tracker)) {
	for _, mode := range []string{"watch", "walk"} {
		t.Run(mode, func(t *testing.T) {
			root := t.TempDir()
			tr := newTracker(root, 100_000)
			switch {
			case mode == "walk":
				tr.stopWatching()
			case tr.in < 0:
				hostcap.Missing(t, hostcap.Inotify, "the tracker could not start one")
			}
			f(t, root, tr)
		})
	}
}

func TestTrackerListsWhatChanged(t *testing.T) {
	trackerModes(t, func(t *testing.T, root string, tr *Tracker) {
		write(t, root, "old.txt", "old")
		write(t, root, "keep/k.txt", "k")
		tr.Baseline()
		if got := paths(tr.Changed()); len(got) != 0 {
			t.Errorf("nothing changed, got %v", got)
		}
		write(t, root, "old.txt", "changed")
		write(t, root, "new/deep/er/n.txt", "n") // directories made after the baseline
		write(t, root, "a.txt", "a")
		if err := os.Symlink("/etc/passwd", filepath.Join(root, "passwd")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/etc", filepath.Join(root, "new/etc")); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
			t.Fatal(err)
		}
		write(t, root, "hard1", "h")
		if err := os.Link(filepath.Join(root, "hard1"), filepath.Join(root, "hard2")); err != nil {
			t.Fatal(err)
		}
		want := []string{"a.txt", "new/deep/er/n.txt", "old.txt"}
		if got := paths(tr.Changed()); !slices.Equal(got, want) {
			t.Errorf("first change: %v, want %v", got, want)
		}
		// A second call lists only what changed since the first.
		write(t, root, "new/deep/er/n.txt", "n2")
		if err := os.Remove(filepath.Join(root, "a.txt")); err != nil {
			t.Fatal(err)
		}
		write(t, root, "keep/sub/s.txt", "s")
		want = []string{"keep/sub/s.txt", "new/deep/er/n.txt"}
		if got := paths(tr.Changed()); !slices.Equal(got, want) {
			t.Errorf("second change: %v, want %v", got, want)
		}
		// A file with a second link is not listed, even when written;
		// with one link again, it is.
		if err := os.Link(filepath.Join(root, "old.txt"), filepath.Join(root, "old2")); err != nil {
			t.Fatal(err)
		}
		write(t, root, "old.txt", "linked")
		if got := paths(tr.Changed()); len(got) != 0 {
			t.Errorf("after linking: %v, want nothing", got)
		}
		if err := os.Remove(filepath.Join(root, "old2")); err != nil {
			t.Fatal(err)
		}
		write(t, root, "old.txt", "one link again")
		if got := paths(tr.Changed()); !slices.Equal(got, []string{"old.txt"}) {
			t.Errorf("after unlinking: %v, want [old.txt]", got)
		}
	})
}

func TestTrackerRenames(t *testing.T) {
	trackerModes(t, func(t *testing.T, root string, tr *Tracker) {
		write(t, root, "d/x.txt", "x")
		tr.Baseline()
		if err := os.Rename(filepath.Join(root, "d"), filepath.Join(root, "e")); err != nil {
			t.Fatal(err)
		}
		if got := paths(tr.Changed()); !slices.Equal(got, []string{"e/x.txt"}) {
			t.Errorf("after renaming the directory: %v, want [e/x.txt]", got)
		}
		// The watch follows the directory to its new name.
		write(t, root, "e/y.txt", "y")
		if err := os.Rename(filepath.Join(root, "e/x.txt"), filepath.Join(root, "z.txt")); err != nil {
			t.Fatal(err)
		}
		if got := paths(tr.Changed()); !slices.Equal(got, []string{"e/y.txt", "z.txt"}) {
			t.Errorf("after writing in it: %v, want [e/y.txt z.txt]", got)
		}
	})
}

func TestTrackerDirectoryReplacedBySymlink(t *testing.T) {
	trackerModes(t, func(t *testing.T, root string, tr *Tracker) {
		outside := t.TempDir()
		write(t, outside, "secret", "host data")
		write(t, root, "d/f.txt", "f")
		tr.Baseline()
		write(t, root, "d/f.txt", "changed")
		// Before the tracker looks, d becomes a symlink to a directory
		// outside the workspace holding a file of the same name.
		write(t, outside, "f.txt", "outside")
		if err := os.RemoveAll(filepath.Join(root, "d")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(root, "d")); err != nil {
			t.Fatal(err)
		}
		if got := paths(tr.Changed()); len(got) != 0 {
			t.Errorf("listed %v through a symlink", got)
		}
	})
}

func TestTrackerOverflowFallsBackToWalk(t *testing.T) {
	root := t.TempDir()
	tr := newTracker(root, 100_000)
	if tr.in < 0 {
		hostcap.Missing(t, hostcap.Inotify, "the tracker could not start one")
	}
	write(t, root, "a.txt", "a")
	tr.Baseline()
	write(t, root, "a.txt", "a2")
	write(t, root, "b.txt", "b")
	// As if the kernel had dropped events: the next call walks, and still
	// lists only what changed.
	tr.drain()
	tr.pending = nil
	tr.rescan = true
	if got := paths(tr.Changed()); !slices.Equal(got, []string{"a.txt", "b.txt"}) {
		t.Errorf("after an overflow: %v, want [a.txt b.txt]", got)
	}
	if tr.in < 0 {
		t.Fatalf("the tracker stopped watching after one overflow")
	}
	write(t, root, "c.txt", "c")
	if got := paths(tr.Changed()); !slices.Equal(got, []string{"c.txt"}) {
		t.Errorf("watching again: %v, want [c.txt]", got)
	}
}

func TestTrackerTooManyDirectories(t *testing.T) {
	root := t.TempDir()
	tr := newTracker(root, 100_000)
	if tr.in < 0 {
		hostcap.Missing(t, hostcap.Inotify, "the tracker could not start one")
	}
	tr.Baseline()
	for i := range maxWatches + 1 {
		if err := os.MkdirAll(filepath.Join(root, fmt.Sprintf("d%d", i/128), fmt.Sprint(i%128)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, root, "d0/0/f.txt", "f")
	if got := paths(tr.Changed()); !slices.Equal(got, []string{"d0/0/f.txt"}) {
		t.Errorf("over the watch limit: %v, want [d0/0/f.txt]", got)
	}
	if tr.in >= 0 {
		t.Errorf("still watching %d directories, over the limit of %d", len(tr.wds), maxWatches)
	}
	write(t, root, "g.txt", "g")
	if got := paths(tr.Changed()); !slices.Equal(got, []string{"g.txt"}) {
		t.Errorf("walking: %v, want [g.txt]", got)
	}
}

// BenchmarkChangedAfterBlock10k measures the look for changes after a
// block that changed one file in a workspace of 10,000 files (100
// directories of 100), watching and walking.
func BenchmarkChangedAfterBlock10k(b *testing.B) {
	for _, mode := range []string{"watch", "walk"} {
		b.Run(mode, func(b *testing.B) {
			root := b.TempDir()
			for i := range 10_000 {
				write(b, root, fmt.Sprintf("d%02d/f%03d.txt", i/100, i%100), "x")
			}
			tr := newTracker(root, 100_000)
			if mode == "walk" {
				tr.stopWatching()
			} else if tr.in < 0 {
				hostcap.Missing(b, hostcap.Inotify, "the tracker could not start one")
			}
			tr.Baseline()
			target := filepath.Join(root, "d42/f042.txt")
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				if err := os.WriteFile(target, []byte(strings.Repeat("x", 1+i%2)), 0o644); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if got := tr.Changed(); len(got) != 1 || got[0].Path != "d42/f042.txt" {
					b.Fatalf("changed() = %v", got)
				}
			}
		})
	}
}

// TestWalkBeneath covers the fallback for kernels without openat2: it
// reaches regular files through real directories and refuses every
// symlink on the way.
func TestWalkBeneath(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
	must(os.WriteFile(filepath.Join(root, "a", "b", "f.txt"), []byte("inside"), 0o644))
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("outside"), 0o644))
	must(os.Symlink(outside, filepath.Join(root, "dirlink")))
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "a", "filelink")))
	dir, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(err)
	defer unix.Close(dir)

	fd, err := openBeneath(dir, "a/b/f.txt")
	must(err)
	buf := make([]byte, 16)
	n, _ := unix.Read(fd, buf)
	unix.Close(fd)
	if string(buf[:n]) != "inside" {
		t.Errorf("read %q", buf[:n])
	}
	fd, err = pathBeneath(dir, "a/b/f.txt")
	must(err)
	unix.Close(fd)
	for _, rel := range []string{"dirlink/secret", "a/filelink", "a/missing"} {
		if fd, err := openBeneath(dir, rel); err == nil {
			unix.Close(fd)
			t.Errorf("openBeneath(%q) succeeded", rel)
		}
		// O_PATH opens a final symlink itself; what matters is that it
		// is not taken for the file it points to.
		if fd, err := pathBeneath(dir, rel); err == nil {
			var st unix.Stat_t
			if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
				t.Errorf("pathBeneath(%q) reached a regular file", rel)
			}
			unix.Close(fd)
		}
	}
}

// TestTrackerListsAtMostMax: a block may create more files than MaxFiles;
// the list keeps the first MaxFiles by name rather than sending more than
// the host accepts.
func TestTrackerListsAtMostMax(t *testing.T) {
	trackerModes(t, func(t *testing.T, root string, tr *Tracker) {
		tr.Baseline()
		for i := range 8 {
			write(t, root, fmt.Sprintf("f%d.txt", i), "x")
		}
		tr.max = 5
		// A walk counts every entry it examines against max, so it may
		// list fewer.
		got := paths(tr.Changed())
		want := []string{"f0.txt", "f1.txt", "f2.txt", "f3.txt", "f4.txt"}
		if len(got) == 0 || len(got) > len(want) || !slices.Equal(got, want[:len(got)]) {
			t.Fatalf("changed = %v, want a prefix of %v", got, want)
		}
	})
}
