//go:build linux

package supervisor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/adk-codemode/codemode/internal/both/clip"
)

// Msg is a message of the supervisor protocol: JSON lines over a Unix
// stream socket between a host running the session and the supervisor
// inside the sandbox, with descriptors passed alongside (SCM_RIGHTS). A
// message that carries descriptors says how many in FDs; they arrive with
// its first bytes.
//
//	host → supervisor: spawn, interrupt, settle, kill, baseline, changed,
//	                   read
//	supervisor → host: spawned (FDs 4: the worker's in, ctl, stdout and
//	                   stderr pipes), exited, settled, killed, files (FDs 1
//	                   with baseline when watching: the inotify
//	                   descriptor), file, error
type Msg struct {
	Op       string     `json:"op"`
	FDs      int        `json:"fds,omitempty"`
	Pid      int        `json:"pid,omitempty"`
	Status   int        `json:"status,omitempty"` // wait status
	Since    int64      `json:"since,omitempty"`  // settle: the block's start, ns on CLOCK_BOOTTIME
	Count    int        `json:"count,omitempty"`  // settled: the processes killed
	Path     string     `json:"path,omitempty"`
	Max      int64      `json:"max,omitempty"`
	Files    []FileInfo `json:"files,omitempty"`
	Watching bool       `json:"watching,omitempty"`
	Data     []byte     `json:"data,omitempty"`
	Error    string     `json:"error,omitempty"`
}

// FileInfo names a regular file in the workspace. It is internal/protocol/wire's
// FileInfo (whose package this one does not import, see the package
// documentation), and converts to it.
type FileInfo struct {
	Path string `json:"path"` // slash-separated, relative to the workspace
	Size int64  `json:"size"`
}

// Operations each side may send, with the descriptors each may carry.
var (
	HostOps       = map[string]int{"spawn": 0, "interrupt": 0, "settle": 0, "kill": 0, "baseline": 0, "changed": 0, "read": 0}
	SupervisorOps = map[string]int{"spawned": 4, "exited": 0, "settled": 0, "killed": 0, "files": 1, "file": 0, "error": 0}
)

const (
	// MaxLine bounds a message: internal/protocol/wire's MaxFrameSize, so that a
	// file of the most a frame may carry fits.
	MaxLine      = 64 << 20
	maxQueuedFDs = 16
	// MaxPath bounds a path in a message: PATH_MAX. The supervisor lists
	// no longer one (it could not open it), and the host refuses to ask
	// for one.
	MaxPath = 4096
	// maxError bounds an error message.
	maxError = 16 << 10
)

// maxFiles bounds the entries of a files message, however short; the host
// keeps at most Config.MaxFiles of them.
var maxFiles = 1 << 20

// WriteTimeout bounds one send: a peer that stops reading must not hold
// the sender up. The connection is closed when it expires. Tests shorten
// it.
var WriteTimeout = 30 * time.Second

// wireMsg is a message as decoded: its files one entry at a time, so that
// no more than maxFiles are ever held.
type wireMsg struct {
	Msg
	Files fileList `json:"files,omitempty"`
}

type fileList []FileInfo

func (f *fileList) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return fmt.Errorf("files: want an array")
	}
	var out fileList
	for dec.More() {
		if len(out) >= maxFiles {
			return fmt.Errorf("more than %d files", maxFiles)
		}
		var fi FileInfo
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

// ErrProtocol is wrapped by every error about what the other end sent.
var ErrProtocol = errors.New("sandboxserver: supervisor protocol error")

// decodeMsg decodes one line strictly: known fields only, one JSON object,
// an operation from ops, at most the descriptors it may carry, paths, file
// lists and error messages within their bounds.
func decodeMsg(line []byte, ops map[string]int) (Msg, error) {
	var w wireMsg
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	err := dec.Decode(&w)
	m := w.Msg
	m.Files = w.Files
	if err != nil {
		return m, fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return m, fmt.Errorf("%w: data after the message", ErrProtocol)
	}
	maxFDs, ok := ops[m.Op]
	switch {
	case !ok:
		return m, fmt.Errorf("%w: unexpected operation %q", ErrProtocol, clip.String(m.Op, 40))
	case m.FDs < 0 || m.FDs > maxFDs || m.Op == "spawned" && m.FDs != maxFDs:
		return m, fmt.Errorf("%w: %s with %d descriptors", ErrProtocol, m.Op, m.FDs)
	case m.Pid < 0 || m.Max < 0 || m.Since < 0 || m.Count < 0:
		return m, fmt.Errorf("%w: a negative number", ErrProtocol)
	case len(m.Path) > MaxPath:
		return m, fmt.Errorf("%w: a path of %d bytes", ErrProtocol, len(m.Path))
	case len(m.Error) > maxError:
		return m, fmt.Errorf("%w: an error message of %d bytes", ErrProtocol, len(m.Error))
	}
	for _, f := range m.Files {
		if f.Path == "" || len(f.Path) > MaxPath || f.Size < 0 {
			return m, fmt.Errorf("%w: bad file entry", ErrProtocol)
		}
	}
	return m, nil
}

// Conn is one end of the supervisor socket. Sends are serialised;
// receives come from one goroutine.
//
// It reads and writes the socket with recvmsg and sendmsg through the
// runtime's poller (os.File's SyscallConn), not package net, whose
// initialisation would hold up the init of the programs that run the
// supervisor (see the package documentation).
type Conn struct {
	f       *os.File // the socket, non-blocking
	rc      syscall.RawConn
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

// NewConn returns a connection on the Unix socket f, whose other end may
// send the operations peerOps lists ([HostOps] or [SupervisorOps]). It
// takes a descriptor of its own for the socket, in non-blocking mode, and
// closes f.
func NewConn(f *os.File, peerOps map[string]int) (*Conn, error) {
	defer f.Close()
	frc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var ferr error
	if err := frc.Control(func(s uintptr) { fd, ferr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil || ferr != nil {
		return nil, errors.Join(err, ferr)
	}
	if dom, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN); err != nil || dom != unix.AF_UNIX {
		unix.Close(fd)
		return nil, errors.New("sandboxserver: the supervisor connection is not a Unix socket")
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	// A non-blocking descriptor goes into the poller: reads and writes
	// wait there, deadlines apply, and Close ends them.
	sock := os.NewFile(uintptr(fd), "supervisor-socket")
	rc, err := sock.SyscallConn()
	if err != nil {
		sock.Close()
		return nil, err
	}
	return &Conn{f: sock, rc: rc, ops: peerOps, maxLine: MaxLine,
		oob: make([]byte, unix.CmsgSpace(4*maxQueuedFDs)), rd: make([]byte, 64<<10)}, nil
}

// Send writes m with files passed alongside. A send that the peer does not
// take within [WriteTimeout], or that fails, closes the connection: a
// message cut short would garble the stream.
func (s *Conn) Send(m Msg, files ...*os.File) error {
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
			CloseFDs(fds)
			return err
		}
		var dupErr error
		if err := rc.Control(func(fd uintptr) {
			var nfd int
			nfd, dupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
			if dupErr == nil {
				fds = append(fds, nfd)
			}
		}); err != nil || dupErr != nil {
			CloseFDs(fds)
			return errors.Join(err, dupErr)
		}
	}
	defer CloseFDs(fds)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.f.SetWriteDeadline(time.Now().Add(WriteTimeout)); err != nil {
		return err
	}
	var rights []byte
	if len(fds) > 0 {
		rights = unix.UnixRights(fds...)
	}
	for len(line) > 0 && err == nil {
		// The descriptors go with the first bytes; a short write
		// leaves the rest for plain writes.
		var n int
		var werr error
		err = s.rc.Write(func(fd uintptr) bool {
			for {
				n, werr = unix.SendmsgN(int(fd), line, rights, nil, unix.MSG_NOSIGNAL)
				if werr != unix.EINTR {
					return werr != unix.EAGAIN
				}
			}
		})
		if err == nil {
			err = werr
		}
		if err == nil {
			line, rights = line[n:], nil
		}
	}
	if err != nil {
		_ = s.f.Close()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("sandboxserver: the other end of the supervisor socket took nothing for %s: %w", WriteTimeout, err)
		}
	}
	return err
}

// Recv returns the next message and the descriptors it carries.
// Descriptors that came with bytes no message claimed them for are closed.
// The end of the stream is io.EOF.
func (s *Conn) Recv() (Msg, []int, error) {
	for {
		if i := bytes.IndexByte(s.buf[s.scanned:], '\n'); i >= 0 {
			i += s.scanned
			line, at := s.buf[:i], s.off
			m, err := decodeMsg(line, s.ops)
			s.buf, s.off, s.scanned = s.buf[i+1:], s.off+int64(i)+1, 0
			// Batches that came wholly before this message were not
			// claimed: drop them.
			for len(s.batches) > 0 && s.batches[0].end <= at {
				CloseFDs(s.batches[0].fds)
				s.batches = s.batches[1:]
			}
			if err != nil {
				return m, nil, err
			}
			if m.FDs == 0 {
				return m, nil, nil
			}
			if len(s.batches) == 0 || s.batches[0].start > at || len(s.batches[0].fds) != m.FDs {
				return m, nil, fmt.Errorf("%w: %s announced %d descriptors that did not come with it", ErrProtocol, m.Op, m.FDs)
			}
			fds := s.batches[0].fds
			s.batches = s.batches[1:]
			return m, fds, nil
		}
		s.scanned = len(s.buf)
		if len(s.buf) > s.maxLine {
			return Msg{}, nil, fmt.Errorf("%w: a message longer than %d bytes", ErrProtocol, s.maxLine)
		}
		var n, oobn, flags int
		var rerr error
		err := s.rc.Read(func(fd uintptr) bool {
			for {
				n, oobn, flags, _, rerr = unix.Recvmsg(int(fd), s.rd, s.oob, unix.MSG_CMSG_CLOEXEC)
				if rerr != unix.EINTR {
					return rerr != unix.EAGAIN
				}
			}
		})
		if err == nil {
			err = rerr
		}
		if err != nil {
			n, oobn = 0, 0
		}
		if oobn > 0 {
			start := s.off + int64(len(s.buf))
			if perr := s.takeRights(s.oob[:oobn], start, start+int64(n)); perr != nil {
				return Msg{}, nil, perr
			}
		}
		if flags&unix.MSG_CTRUNC != 0 {
			return Msg{}, nil, fmt.Errorf("%w: too many descriptors at once", ErrProtocol)
		}
		s.buf = append(s.buf, s.rd[:n]...)
		if err != nil {
			return Msg{}, nil, err
		}
		if n == 0 && oobn == 0 {
			return Msg{}, nil, io.EOF
		}
	}
}

func (s *Conn) takeRights(oob []byte, start, end int64) error {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	var fds []int
	for _, m := range msgs {
		got, err := unix.ParseUnixRights(&m)
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
		return fmt.Errorf("%w: %d descriptors nobody asked for", ErrProtocol, queued)
	}
	return nil
}

// DropFDs closes every descriptor received and not claimed. Only the
// receiving goroutine may call it.
func (s *Conn) DropFDs() {
	for _, b := range s.batches {
		CloseFDs(b.fds)
	}
	s.batches = nil
}

// Close closes the socket, which ends a send or receive in progress. Any
// goroutine may call it, more than once.
func (s *Conn) Close() error { return s.f.Close() }

// CloseFDs closes the descriptors fds.
func CloseFDs(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}
