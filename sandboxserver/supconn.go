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

	"github.com/adk-codemode/codemode/transport"
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
	Op       string               `json:"op"`
	FDs      int                  `json:"fds,omitempty"`
	Pid      int                  `json:"pid,omitempty"`
	Status   int                  `json:"status,omitempty"` // wait status
	Path     string               `json:"path,omitempty"`
	Max      int64                `json:"max,omitempty"`
	Files    []transport.FileInfo `json:"files,omitempty"`
	Watching bool                 `json:"watching,omitempty"`
	Data     []byte               `json:"data,omitempty"`
	Error    string               `json:"error,omitempty"`
}

// Operations each side may send, with the descriptors each may carry.
var (
	hostOps = map[string]int{"spawn": 0, "interrupt": 0, "kill": 0, "baseline": 0, "changed": 0, "read": 0}
	supOps  = map[string]int{"spawned": 4, "exited": 0, "killed": 0, "files": 1, "file": 0, "error": 0}
)

const (
	maxSupLine   = transport.MaxFrameSize
	maxQueuedFDs = 16
)

var errSupProtocol = errors.New("sandboxserver: supervisor protocol error")

// decodeSupMsg decodes one line strictly: known fields only, one JSON
// object, an operation from ops, at most the descriptors it may carry.
func decodeSupMsg(line []byte, ops map[string]int) (supMsg, error) {
	var m supMsg
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("%w: %v", errSupProtocol, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return m, fmt.Errorf("%w: data after the message", errSupProtocol)
	}
	maxFDs, ok := ops[m.Op]
	switch {
	case !ok:
		return m, fmt.Errorf("%w: unexpected operation %q", errSupProtocol, truncate(m.Op, 40))
	case m.FDs < 0 || m.FDs > maxFDs || m.Op == "spawned" && m.FDs != maxFDs:
		return m, fmt.Errorf("%w: %s with %d descriptors", errSupProtocol, m.Op, m.FDs)
	case m.Pid < 0 || m.Max < 0:
		return m, fmt.Errorf("%w: negative pid or size", errSupProtocol)
	}
	for _, f := range m.Files {
		if f.Path == "" || f.Size < 0 {
			return m, fmt.Errorf("%w: bad file entry", errSupProtocol)
		}
	}
	return m, nil
}

// supConn is one end of the supervisor socket. Sends are serialised;
// receives come from one goroutine.
type supConn struct {
	c   *net.UnixConn
	ops map[string]int // what the other end may send

	wmu sync.Mutex

	buf []byte // received, not yet returned
	fds []int  // received descriptors not yet claimed
	oob []byte
	rd  []byte
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
	return &supConn{c: uc, ops: peerOps, oob: make([]byte, syscall.CmsgSpace(4*maxQueuedFDs)), rd: make([]byte, 64<<10)}, nil
}

// send writes m with files passed alongside.
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
	if len(fds) > 0 {
		n, _, err := s.c.WriteMsgUnix(line, syscall.UnixRights(fds...), nil)
		if err != nil {
			return err
		}
		line = line[n:]
	}
	if len(line) > 0 {
		_, err = s.c.Write(line)
	}
	return err
}

// recv returns the next message and the descriptors it carries.
func (s *supConn) recv() (supMsg, []int, error) {
	for {
		if i := bytes.IndexByte(s.buf, '\n'); i >= 0 {
			line := s.buf[:i]
			m, err := decodeSupMsg(line, s.ops)
			s.buf = s.buf[i+1:]
			if err != nil {
				return m, nil, err
			}
			if m.FDs > len(s.fds) {
				return m, nil, fmt.Errorf("%w: %s announced %d descriptors, %d arrived", errSupProtocol, m.Op, m.FDs, len(s.fds))
			}
			fds := append([]int(nil), s.fds[:m.FDs]...)
			s.fds = s.fds[m.FDs:]
			return m, fds, nil
		}
		if len(s.buf) > maxSupLine {
			return supMsg{}, nil, fmt.Errorf("%w: a message longer than %d bytes", errSupProtocol, maxSupLine)
		}
		n, oobn, flags, _, err := s.c.ReadMsgUnix(s.rd, s.oob)
		n, oobn = max(n, 0), max(oobn, 0)
		if oobn > 0 {
			if perr := s.takeRights(s.oob[:oobn]); perr != nil {
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

func (s *supConn) takeRights(oob []byte) error {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return fmt.Errorf("%w: %v", errSupProtocol, err)
	}
	for _, m := range msgs {
		fds, err := syscall.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		s.fds = append(s.fds, fds...)
	}
	if len(s.fds) > maxQueuedFDs {
		return fmt.Errorf("%w: %d descriptors nobody asked for", errSupProtocol, len(s.fds))
	}
	return nil
}

// close closes the socket and every descriptor received and not claimed.
func (s *supConn) close() error {
	closeFDs(s.fds)
	s.fds = nil
	return s.c.Close()
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = syscall.Close(fd)
	}
}
