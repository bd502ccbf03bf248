package wsproto

import (
	"archive/tar"
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFilesRoundTrip(t *testing.T) {
	files := map[string][]byte{
		"tools/__init__.py":   []byte("from .a import a\n"),
		"tools/a.py":          []byte("def a(): pass\n"),
		"tools/data/empty":    {},
		"tools/" + longName(): []byte("x"),
	}
	data, err := EncodeFiles(files, FileLimits{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeFiles(data, FileLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(files, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if got, err := DecodeFiles(nil, FileLimits{}); err != nil || len(got) != 0 {
		t.Errorf("empty message: %v, %v", got, err)
	}
}

func longName() string { return strings.Repeat("n", 200) + ".py" }

// archive builds a tar archive from raw headers, as a hostile client could.
func archive(t *testing.T, hs ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hs {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(make([]byte, h.Size)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecodeFilesRefuses(t *testing.T) {
	reg := func(name string, size int64) *tar.Header {
		return &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o644}
	}
	tests := []struct {
		name string
		data []byte
		lim  FileLimits
		want string
	}{
		{"symlink", archive(t, &tar.Header{Typeflag: tar.TypeSymlink, Name: "tools/x", Linkname: "/etc/passwd"}), FileLimits{}, "not a regular file"},
		{"hard link", archive(t, &tar.Header{Typeflag: tar.TypeLink, Name: "tools/x", Linkname: "tools/y"}), FileLimits{}, "not a regular file"},
		{"fifo", archive(t, &tar.Header{Typeflag: tar.TypeFifo, Name: "tools/x"}), FileLimits{}, "not a regular file"},
		{"absolute path", archive(t, reg("/etc/x", 1)), FileLimits{}, "absolute"},
		{"dot-dot", archive(t, reg("tools/../../x", 1)), FileLimits{}, `".."`},
		{"unclean path", archive(t, reg("tools//x", 1)), FileLimits{}, "clean form"},
		{"backslash", archive(t, reg(`tools\x`, 1)), FileLimits{}, "backslash"},
		{"twice", archive(t, reg("a", 1), reg("a", 1)), FileLimits{}, "twice"},
		{"file and directory", archive(t, reg("a", 1), reg("a/b", 1)), FileLimits{}, "both a file and a directory"},
		{"directory then file", archive(t, &tar.Header{Typeflag: tar.TypeDir, Name: "a/"}, reg("a", 1)), FileLimits{}, "twice"},
		{"too many files", archive(t, reg("a", 1), reg("b", 1), reg("c", 1)), FileLimits{MaxFiles: 2}, "over 2 files"},
		{"too large in all", archive(t, reg("a", 600), reg("b", 600)), FileLimits{MaxBytes: 3000}, "over the limit"},
		{"message too large", make([]byte, 4096), FileLimits{MaxBytes: 1024}, "over the limit"},
		{"not tar", []byte("hello, this is not a tar archive at all, but it is long enough to be read as a header block................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................."), FileLimits{}, "not a valid tar"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeFiles(tc.data, tc.lim)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("DecodeFiles = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestEncodeFilesRefusesBadPaths(t *testing.T) {
	for _, name := range []string{"", "/abs", "../x", "a/./b", "a/", strings.Repeat("x", 1025)} {
		if _, err := EncodeFiles(map[string][]byte{name: nil}, FileLimits{}); err == nil {
			t.Errorf("EncodeFiles accepted path %q", name)
		}
	}
}

func FuzzDecodeFiles(f *testing.F) {
	seed, _ := EncodeFiles(map[string][]byte{"tools/__init__.py": []byte("x = 1\n"), "tools/b/c.py": nil}, FileLimits{})
	f.Add(seed)
	f.Add([]byte{})
	f.Add(make([]byte, 1024))
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := FileLimits{MaxBytes: 1 << 20, MaxFiles: 64}
		files, err := DecodeFiles(data, lim)
		if err != nil {
			return
		}
		total := 0
		for name, body := range files {
			if err := CheckPath(name); err != nil {
				t.Fatalf("decoded a bad path: %v", err)
			}
			if parent(name) != "" {
				if _, ok := files[parent(name)]; ok {
					t.Fatalf("%q is both a file and a directory", parent(name))
				}
			}
			total += len(body)
		}
		if len(files) > lim.MaxFiles || int64(total) > lim.MaxBytes {
			t.Fatalf("limits breached: %d files, %d bytes", len(files), total)
		}
		// What decodes encodes again to the same files.
		again, err := EncodeFiles(files, FileLimits{MaxBytes: 8 << 20, MaxFiles: 64})
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		back, err := DecodeFiles(again, FileLimits{MaxBytes: 8 << 20, MaxFiles: 64})
		if err != nil || len(back) != len(files) {
			t.Fatalf("re-decode: %d files, %v", len(back), err)
		}
	})
}
