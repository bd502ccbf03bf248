//go:build linux

package server

import (
	"bytes"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// capture reads one output stream of the worker (fd 1 or 2, shared with
// every process the code starts) and keeps a bounded view of it per block:
// the first half of the budget and the last half, with a count of the bytes
// dropped between them.
//
// A block's output is what reached the pipe before the worker reported the
// block's end: the worker flushes its streams before it sends done, and a
// write to a pipe has landed when it returns, so output that a child
// process wrote before the block ended is in the pipe by then. At done the
// server drains the pipe and takes the view; whatever comes later belongs
// to the next block. Every read, the reading goroutine's and drain's,
// happens under mu, so none can be taken out of order.
type capture struct {
	mu      sync.Mutex
	f       *os.File
	fd      int // f's descriptor, read only under mu while !closed
	closed  bool
	limit   int64
	head    []byte
	tail    []byte // ring buffer once full
	tailPos int
	dropped int64
	buf     []byte
	eof     chan struct{}
}

func newCapture(f *os.File, limit int64) *capture {
	c := &capture{f: f, fd: -1, limit: limit, buf: make([]byte, 64<<10), eof: make(chan struct{})}
	rc, err := f.SyscallConn()
	if err == nil {
		_ = rc.Control(func(fd uintptr) { c.fd = int(fd) })
	}
	go c.read(rc, err)
	return c
}

// setLimit sets the byte budget of the current block's view.
func (c *capture) setLimit(limit int64) {
	c.mu.Lock()
	c.limit = limit
	c.mu.Unlock()
}

func (c *capture) read(rc interface {
	Read(func(fd uintptr) bool) error
}, err error) {
	defer close(c.eof)
	if err != nil || c.fd < 0 {
		return
	}
	done := false
	for !done && err == nil {
		// The callback reads until the pipe is empty; the runtime poller
		// then waits, without mu, until there is more.
		err = rc.Read(func(uintptr) bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			done = c.readLocked()
			return done
		})
	}
}

// readLocked reads what the pipe holds now and reports whether the stream
// ended. Callers hold mu.
func (c *capture) readLocked() (ended bool) {
	if c.closed {
		return true
	}
	for {
		n, err := unix.Read(c.fd, c.buf)
		if n > 0 {
			c.append(c.buf[:n])
			continue
		}
		switch err {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		return true // end of stream, or an error that ends it
	}
}

// drain takes into the current view whatever the pipe holds now.
func (c *capture) drain() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readLocked()
}

// close stops reading and closes the pipe.
func (c *capture) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.f.Close()
}

// append adds to the current block's view. Callers hold mu.
func (c *capture) append(p []byte) {
	headMax := c.limit / 2
	if room := headMax - int64(len(c.head)); room > 0 {
		n := min(room, int64(len(p)))
		c.head = append(c.head, p[:n]...)
		p = p[n:]
	}
	tailMax := int(c.limit - headMax)
	if len(p) == 0 || tailMax <= 0 {
		c.dropped += int64(len(p))
		return
	}
	if len(p) >= tailMax {
		c.dropped += int64(len(c.tail)) + int64(len(p)-tailMax)
		c.tail = append(c.tail[:0], p[len(p)-tailMax:]...)
		c.tailPos = 0
		return
	}
	if len(c.tail) < tailMax {
		room := tailMax - len(c.tail)
		n := min(room, len(p))
		c.tail = append(c.tail, p[:n]...)
		p = p[n:]
	}
	for len(p) > 0 { // ring is full: overwrite the oldest bytes
		n := copy(c.tail[c.tailPos:], p)
		c.dropped += int64(n)
		p = p[n:]
		c.tailPos = (c.tailPos + n) % len(c.tail)
	}
}

// take returns the view collected so far and starts an empty one.
func (c *capture) take() (string, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b bytes.Buffer
	b.Grow(len(c.head) + len(c.tail))
	b.Write(c.head)
	b.Write(c.tail[c.tailPos:])
	b.Write(c.tail[:c.tailPos])
	dropped := c.dropped
	c.head, c.tail, c.tailPos, c.dropped = nil, nil, 0, 0
	return b.String(), dropped
}
