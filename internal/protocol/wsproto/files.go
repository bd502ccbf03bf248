package wsproto

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// FileLimits bound the files message. The zero value means the defaults.
type FileLimits struct {
	// MaxBytes bounds the message, and so the files' total size. Zero
	// means 100 MiB.
	MaxBytes int64
	// MaxFiles bounds the number of files. Zero means 10,000.
	MaxFiles int
}

func (l *FileLimits) setDefaults() {
	if l.MaxBytes <= 0 {
		l.MaxBytes = 100 << 20
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = 10_000
	}
}

const (
	maxPathBytes = 1024
	maxNameBytes = 255
)

// CheckPath reports whether name may be the path of a session file: a
// relative slash-separated path of at most 1024 bytes, valid UTF-8, with no
// empty, "." or ".." element, no element over 255 bytes, and no NUL or
// backslash.
func CheckPath(name string) error {
	switch {
	case name == "":
		return errors.New("empty path")
	case len(name) > maxPathBytes:
		return fmt.Errorf("path of %d bytes is over the limit of %d", len(name), maxPathBytes)
	case !utf8.ValidString(name):
		return fmt.Errorf("path %q is not valid UTF-8", name)
	case strings.HasPrefix(name, "/"):
		return fmt.Errorf("path %q is absolute; paths are relative to the files directory", name)
	case strings.ContainsAny(name, "\x00\\"):
		return fmt.Errorf("path %q holds a NUL or a backslash", name)
	}
	for elem := range strings.SplitSeq(name, "/") {
		switch {
		case elem == "" || elem == ".":
			return fmt.Errorf("path %q has an empty or \".\" element; write it in clean form", name)
		case elem == "..":
			return fmt.Errorf("path %q has a \"..\" element, which would leave the files directory", name)
		case len(elem) > maxNameBytes:
			return fmt.Errorf("path %q has an element over %d bytes", name, maxNameBytes)
		}
	}
	return nil
}

// EncodeFiles returns the files message: a tar archive of regular files
// in path order. Every path must pass [CheckPath], and the whole must
// stay within lim.
func EncodeFiles(files map[string][]byte, lim FileLimits) ([]byte, error) {
	lim.setDefaults()
	if len(files) > lim.MaxFiles {
		return nil, fmt.Errorf("wsproto: %d files, over the limit of %d", len(files), lim.MaxFiles)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if err := CheckPath(name); err != nil {
			return nil, fmt.Errorf("wsproto: session file: %w", err)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range names {
		data := files[name]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o444, Size: int64(len(data)), Format: tar.FormatPAX}); err != nil {
			return nil, fmt.Errorf("wsproto: session file %s: %w", name, err)
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
		if int64(buf.Len()) > lim.MaxBytes {
			return nil, fmt.Errorf("wsproto: the session's files take over the limit of %d bytes", lim.MaxBytes)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > lim.MaxBytes {
		return nil, fmt.Errorf("wsproto: the session's files take over the limit of %d bytes", lim.MaxBytes)
	}
	return buf.Bytes(), nil
}

// DecodeFiles decodes a files message. It is strict: every entry must be
// a regular file (directories are allowed and ignored) with a path that
// passes [CheckPath], no path may come twice or be both a file and a
// directory, and the files must stay within lim. An empty message holds
// no files.
func DecodeFiles(data []byte, lim FileLimits) (map[string][]byte, error) {
	lim.setDefaults()
	if int64(len(data)) > lim.MaxBytes {
		return nil, fmt.Errorf("wsproto: files message of %d bytes is over the limit of %d", len(data), lim.MaxBytes)
	}
	files := map[string][]byte{}
	if len(data) == 0 {
		return files, nil
	}
	dirs := map[string]bool{}
	budget := lim.MaxBytes
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("wsproto: files message is not a valid tar archive: %w", err)
		}
		name := h.Name
		if h.Typeflag == tar.TypeDir {
			name = strings.TrimSuffix(name, "/")
		}
		if err := CheckPath(name); err != nil {
			return nil, fmt.Errorf("wsproto: files message: %w", err)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if _, ok := files[name]; ok {
				return nil, fmt.Errorf("wsproto: files message: %q is both a file and a directory", name)
			}
			dirs[name] = true
			continue
		case tar.TypeReg:
		default:
			return nil, fmt.Errorf("wsproto: files message: %q is not a regular file (tar type %q); links and special files are refused", name, h.Typeflag)
		}
		if h.Linkname != "" {
			return nil, fmt.Errorf("wsproto: files message: %q names a link target", name)
		}
		if _, ok := files[name]; ok || dirs[name] {
			return nil, fmt.Errorf("wsproto: files message: %q comes twice", name)
		}
		for dir := parent(name); dir != ""; dir = parent(dir) {
			if _, ok := files[dir]; ok {
				return nil, fmt.Errorf("wsproto: files message: %q is both a file and a directory", dir)
			}
			dirs[dir] = true
		}
		if len(files) == lim.MaxFiles {
			return nil, fmt.Errorf("wsproto: files message holds over %d files", lim.MaxFiles)
		}
		if h.Size < 0 || h.Size > budget {
			return nil, fmt.Errorf("wsproto: files message: %q of %d bytes is over the limit of %d bytes in all", name, h.Size, lim.MaxBytes)
		}
		budget -= h.Size
		body := make([]byte, h.Size)
		if _, err := io.ReadFull(tr, body); err != nil {
			return nil, fmt.Errorf("wsproto: files message: %q: %w", name, err)
		}
		files[name] = body
	}
	return files, nil
}

func parent(name string) string {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return ""
	}
	return name[:i]
}

// SendFiles sends the files message. If the server refuses it, the error
// is the server's close frame, with its reason.
func (s *Stream) SendFiles(files map[string][]byte, lim FileLimits) error {
	data, err := EncodeFiles(files, lim)
	if err != nil {
		return err
	}
	_ = s.ws.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
	if err := s.ws.WriteMessage(websocket.BinaryMessage, data); err != nil {
		// The server may have closed the connection with a reason.
		_ = s.ws.SetReadDeadline(time.Now().Add(time.Second))
		if _, _, rerr := s.ws.NextReader(); rerr != nil && errors.As(rerr, new(*websocket.CloseError)) {
			return rerr
		}
		return err
	}
	return nil
}

// ReadFiles reads and decodes the files message, which must arrive by
// deadline. A breach of a limit or of the deadline closes the connection
// with a reason that names it, and so does an invalid message.
func (s *Stream) ReadFiles(lim FileLimits, deadline time.Time) (map[string][]byte, error) {
	lim.setDefaults()
	_ = s.ws.SetReadDeadline(deadline)
	typ, r, err := s.ws.NextReader()
	if err == nil && typ != websocket.BinaryMessage {
		s.CloseWith(websocket.CloseUnsupportedData, "the first message must be the binary files message")
		return nil, errors.New("wsproto: the client's first message is not the binary files message")
	}
	var data []byte
	if err == nil {
		data, err = io.ReadAll(io.LimitReader(r, lim.MaxBytes+1))
		if err == nil && int64(len(data)) > lim.MaxBytes {
			return nil, s.breach(websocket.CloseMessageTooBig, "tools package size", fmt.Sprintf("%d bytes", lim.MaxBytes))
		}
	}
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, s.breach(websocket.ClosePolicyViolation, "handshake time", "its deadline: the files message did not arrive")
		}
		return nil, err
	}
	files, err := DecodeFiles(data, lim)
	if err != nil {
		s.CloseWith(websocket.CloseInvalidFramePayloadData, strings.TrimPrefix(err.Error(), "wsproto: "))
		return nil, err
	}
	s.extend()
	return files, nil
}
