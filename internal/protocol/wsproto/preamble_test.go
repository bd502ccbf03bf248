package wsproto

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFilesPreambleRoundTrip(t *testing.T) {
	files := map[string][]byte{"tools/__init__.py": []byte("from ._x import *\n"), "tools/_x.py": []byte("y = 2\n")}
	var buf bytes.Buffer
	if err := WriteFilesPreamble(&buf, files, FileLimits{}); err != nil {
		t.Fatal(err)
	}
	buf.WriteString(`{"type":"next frame"}` + "\n")
	got, err := ReadFilesPreamble(&buf, FileLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(files, got); diff != "" {
		t.Errorf("files (-sent +read):\n%s", diff)
	}
	rest, _ := io.ReadAll(&buf)
	if string(rest) != `{"type":"next frame"}`+"\n" {
		t.Errorf("the frames after the preamble: %q; want them untouched", rest)
	}
}

func TestFilesPreambleEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteFilesPreamble(&buf, nil, FileLimits{}); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFilesPreamble(&buf, FileLimits{})
	if err != nil || len(got) != 0 {
		t.Fatalf("ReadFilesPreamble = %v, %v; want no files", got, err)
	}
}

func TestFilesPreambleRefusals(t *testing.T) {
	header := func(n uint64) []byte {
		b := []byte(preambleMagic)
		return binary.BigEndian.AppendUint64(b, n)
	}
	link := func() []byte {
		var buf bytes.Buffer
		data := archive(t, &tar.Header{Typeflag: tar.TypeSymlink, Name: "tools/x", Linkname: "/etc/passwd"})
		buf.Write(header(uint64(len(data))))
		buf.Write(data)
		return buf.Bytes()
	}
	cases := []struct {
		name, in, want string
	}{
		{"empty stream", "", "ended before the files preamble"},
		{"a frame instead", `{"type":"run","id":"1"}` + "\n", "does not open with the files preamble"},
		{"short header", preambleMagic + "\x00\x00", "header"},
		{"over the limit", string(header(1 << 40)), "over the limit of 4096"},
		{"truncated message", string(header(100)) + "abc", "ended after"},
		{"a symlink", string(link()), "not a regular file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadFilesPreamble(strings.NewReader(c.in), FileLimits{MaxBytes: 4096})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v; want one containing %q", err, c.want)
			}
		})
	}
}

func FuzzReadFilesPreamble(f *testing.F) {
	var seed bytes.Buffer
	_ = WriteFilesPreamble(&seed, map[string][]byte{"tools/__init__.py": []byte("x = 1\n")}, FileLimits{})
	f.Add(seed.Bytes())
	f.Add([]byte(preambleMagic))
	f.Add(binary.BigEndian.AppendUint64([]byte(preambleMagic), 1<<62))
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := FileLimits{MaxBytes: 1 << 16, MaxFiles: 64}
		r := bytes.NewReader(data)
		files, err := ReadFilesPreamble(r, lim)
		if err != nil {
			return
		}
		consumed := len(data) - r.Len()
		if consumed > preambleHeader+int(lim.MaxBytes) {
			t.Fatalf("read %d bytes, over the header and the limit", consumed)
		}
		for name := range files {
			if err := CheckPath(name); err != nil {
				t.Fatalf("decoded a bad path: %v", err)
			}
		}
	})
}
