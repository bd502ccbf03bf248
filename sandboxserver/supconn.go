//go:build linux

package sandboxserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/adk-codemode/codemode/internal/clip"
	"github.com/adk-codemode/codemode/transport/wire"
)

// The supervisor protocol: JSON lines over a Unix stream socket between a
// host running the session and the supervisor inside the sandbox, with
// descriptors passed alongside (SCM_RIGHTS). A message that carries
// descriptors says how many in FDs; they arrive with its first bytes.
//
//	host → supervisor: spawn, interrupt, kill, baseline, changed, read
//	supervisor → host: spawned (FDs 4: the worker's in, ctl, stdout and
//	                   stderr pipes), exited, killed, files (FDs 1 with
//	                   baseline when watching: the inotify descriptor),
//	                   file, error
type supMsg struct {
	Op       string          `json:"op"`
	FDs      int             `json:"fds,omitempty"`
	Pid      int             `json:"pid,omitempty"`
	Status   int             `json:"status,omitempty"` // wait status
	Path     string          `json:"path,omitempty"`
	Max      int64           `json:"max,omitempty"`
	Files    []wire.FileInfo `json:"files,omitempty"`
	Watching bool            `json:"watching,omitempty"`
	Data     []byte          `json:"data,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// Operations each side may send, with the descriptors each may carry.
var (
	hostOps = map[string]int{"spawn": 0, "interrupt": 0, "kill": 0, "baseline": 0, "changed": 0, "read": 0}
	supOps  = map[string]int{"spawned": 4, "exited": 0, "killed": 0, "files": 1, "file": 0, "error": 0}
)

const (
	maxSupLine   = wire.MaxFrameSize
	maxQueuedFDs = 16
	// maxSupPath bounds a path in a message: PATH_MAX. The supervisor
	// lists no longer one (it could not open it), and the host refuses to
	// ask for one.
	maxSupPath = 4096
	// maxSupFiles bounds the entries of a files message, however short;
	// the host keeps at most Config.MaxFiles of them.
	// maxSupError bounds an error message.
	maxSupError = 16 << 10
)

// maxSupFiles bounds the entries of a files message, however short; the
// host keeps at most Config.MaxFiles of them.
var maxSupFiles = 1 << 20

// supWriteTimeout bounds one send: a peer that stops reading must not
// hold the sender up. The connection is closed when it expires.
var supWriteTimeout = 30 * time.Second

// supWire is a message as decoded: its files one entry at a time, so
// that no more than maxSupFiles are ever held.
type supWire struct {
	supMsg
	Files supFiles `json:"files,omitempty"`
}

type supFiles []wire.FileInfo

func (f *supFiles) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return fmt.Errorf("files: want an array")
	}
	var out supFiles
	for dec.More() {
		if len(out) >= maxSupFiles {
			return fmt.Errorf("more than %d files", maxSupFiles)
		}
		var fi wire.FileInfo
		if err := dec.Decode(&fi); err != nil {
			return err
		}
		out = append(out, fi)
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	*f = out
	return nil
}

var errSupProtocol = errors.New("sandboxserver: supervisor protocol error")

// decodeSupMsg decodes one line strictly: known fields only, one JSON
// object, an operation from ops, at most the descriptors it may carry,
// paths, file lists and error messages within their bounds.
func decodeSupMsg(line []byte, ops map[string]int) (supMsg, error) {
	var w supWire
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	err := dec.Decode(&w)
	m := w.supMsg
	m.Files = w.Files
	if err != nil {
		return m, fmt.Errorf("%w: %w", errSupProtocol, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return m, fmt.Errorf("%w: data after the message", errSupProtocol)
	}
	maxFDs, ok := ops[m.Op]
	switch {
	case !ok:
		return m, fmt.Errorf("%w: unexpected operation %q", errSupProtocol, clip.String(m.Op, 40))
	case m.FDs < 0 || m.FDs > maxFDs || m.Op == "spawned" && m.FDs != maxFDs:
		return m, fmt.Errorf("%w: %s with %d descriptors", errSupProtocol, m.Op, m.FDs)
	case m.Pid < 0 || m.Max < 0:
		return m, fmt.Errorf("%w: negative pid or size", errSupProtocol)
	case len(m.Path) > maxSupPath:
		return m, fmt.Errorf("%w: a path of %d bytes", errSupProtocol, len(m.Path))
	case len(m.Error) > maxSupError:
		return m, fmt.Errorf("%w: an error message of %d bytes", errSupProtocol, len(m.Error))
	}
	for _, f := range m.Files {
		if f.Path == "" || len(f.Path) > maxSupPath || f.Size < 0 {
			return m, fmt.Errorf("%w: bad file entry", errSupProtocol)
		}
	}
	return m, nil
}

// supConn is one end of the supervisor socket. Sends are serialised;
// receives come from one goroutine.
type supConn struct {
	c       *net.UnixConn
	ops     map[string]int // what the other end may send
	maxLine int            // the longest message accepted

	wmu sync.Mutex

	buf     []byte  // received, not yet returned
	off     int64   // stream offset of buf[0]
	scanned int     // buf[:scanned] has no newline
	batches []batch // received descriptors not yet claimed, oldest first
	oob     []byte
	rd      []byte
}

// batch is the descriptors that one read brought, with the stream range
// of that read's bytes. The kernel hands descriptors over with the first
// bytes of the write that carried them, and a sender starts each message
// with its own write, so a message's descriptors came with the read that
// holds its first byte.
type batch struct {
	start, end int64
	fds        []int
}

func newSupConn(f *os.File, peerOps map[string]int) (*supConn, error) {
	fc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	uc, ok := fc.(*net.UnixConn)
	if !ok {
		fc.Close()
		return nil, errors.New("sandboxserver: the supervisor connection is not a Unix socket")
	}
	return &supConn{c: uc, ops: peerOps, maxLine: maxSupLine, oob: make([]byte, syscall.CmsgSpace(4*maxQueuedFDs)), rd: make([]byte, 64<<10)}, nil
}

// send writes m with files passed alongside. A send that the peer does not
// take within supWriteTimeout, or that fails, closes the connection: a
// message cut short would garble the stream.
func (s *supConn) send(m supMsg, files ...*os.File) error {
	m.FDs = len(files)
	line, err := json.Marshal(m)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	var fds []int
	for _, f := range files {
		// Dup through the raw descriptor: Fd() would make the file (and
		// so the peer's copy) blocking.
		rc, err := f.SyscallConn()
		if err != nil {
			closeFDs(fds)
			return err
		}
		var dupErr error
		if err := rc.Control(func(fd uintptr) {
			var nfd int
			nfd, dupErr = syscall.Dup(int(fd))
			if dupErr == nil {
				syscall.CloseOnExec(nfd)
				fds = append(fds, nfd)
			}
		}); err != nil || dupErr != nil {
			closeFDs(fds)
			return errors.Join(err, dupErr)
		}
	}
	defer closeFDs(fds)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.c.SetWriteDeadline(time.Now().Add(supWriteTimeout)); err != nil {
		return err
	}
	if len(fds) > 0 {
		var n int
		n, _, err = s.c.WriteMsgUnix(line, syscall.UnixRights(fds...), nil)
		line = line[max(n, 0):]
	}
	if err == nil && len(line) > 0 {
		_, err = s.c.Write(line)
	}
	if err != nil {
		_ = s.c.Close()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("sandboxserver: the other end of the supervisor socket took nothing for %s: %w", supWriteTimeout, err)
		}
	}
	return err
}

// recv returns the next message and the descriptors it carries.
// Descriptors that came with bytes no message claimed them for are closed.
func (s *supConn) recv() (supMsg, []int, error) {
	for {
		if i := bytes.IndexByte(s.buf[s.scanned:], '\n'); i >= 0 {
			i += s.scanned
			line, at := s.buf[:i], s.off
			m, err := decodeSupMsg(line, s.ops)
			s.buf, s.off, s.scanned = s.buf[i+1:], s.off+int64(i)+1, 0
			// Batches that came wholly before this message were not
			// claimed: drop them.
			for len(s.batches) > 0 && s.batches[0].end <= at {
				closeFDs(s.batches[0].fds)
				s.batches = s.batches[1:]
			}
			if err != nil {
				return m, nil, err
			}
			if m.FDs == 0 {
				return m, nil, nil
			}
			if len(s.batches) == 0 || s.batches[0].start > at || len(s.batches[0].fds) != m.FDs {
				return m, nil, fmt.Errorf("%w: %s announced %d descriptors that did not come with it", errSupProtocol, m.Op, m.FDs)
			}
			fds := s.batches[0].fds
			s.batches = s.batches[1:]
			return m, fds, nil
		}
		s.scanned = len(s.buf)
		if len(s.buf) > s.maxLine {
			return supMsg{}, nil, fmt.Errorf("%w: a message longer than %d bytes", errSupProtocol, s.maxLine)
		}
		n, oobn, flags, _, err := s.c.ReadMsgUnix(s.rd, s.oob)
		n, oobn = max(n, 0), max(oobn, 0)
		if oobn > 0 {
			start := s.off + int64(len(s.buf))
			if perr := s.takeRights(s.oob[:oobn], start, start+int64(n)); perr != nil {
				return supMsg{}, nil, perr
			}
		}
		if flags&syscall.MSG_CTRUNC != 0 {
			return supMsg{}, nil, fmt.Errorf("%w: too many descriptors at once", errSupProtocol)
		}
		s.buf = append(s.buf, s.rd[:n]...)
		if err != nil {
			return supMsg{}, nil, err
		}
		if n == 0 && oobn == 0 {
			return supMsg{}, nil, io.EOF
		}
	}
}

func (s *supConn) takeRights(oob []byte, start, end int64) error {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return fmt.Errorf("%w: %w", errSupProtocol, err)
	}
	var fds []int
	for _, m := range msgs {
		got, err := syscall.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		fds = append(fds, got...)
	}
	if len(fds) == 0 {
		return nil
	}
	s.batches = append(s.batches, batch{start: start, end: end, fds: fds})
	queued := 0
	for _, b := range s.batches {
		queued += len(b.fds)
	}
	if queued > maxQueuedFDs {
		return fmt.Errorf("%w: %d descriptors nobody asked for", errSupProtocol, queued)
	}
	return nil
}

// dropFDs closes every descriptor received and not claimed. Only the
// receiving goroutine may call it.
func (s *supConn) dropFDs() {
	for _, b := range s.batches {
		closeFDs(b.fds)
	}
	s.batches = nil
}

// close closes the socket and every descriptor received and not claimed.
func (s *supConn) close() error {
	s.dropFDs()
	return s.c.Close()
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = syscall.Close(fd)
	}
}
