package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/adk-codemode/codemode/transport"
)

// MaxFrameSize is the default limit on one frame line, in bytes. It bounds
// the memory one frame can take; file transfers and outputs are sized so
// that they fit.
const MaxFrameSize = 64 << 20

// Conn reads and writes frames on a byte stream.
//
// Read must not be called concurrently; Write may be called from any number
// of goroutines. Close closes the underlying stream, which unblocks Read.
type Conn struct {
	r       *bufio.Reader
	max     int
	line    []byte
	broken  error
	wmu     sync.Mutex
	w       io.Writer
	wbuf    bytes.Buffer
	closer  io.Closer
	closeMu sync.Once

	// A Conn from NewConnPipe passes frame values instead of bytes.
	in, out *framePipe
}

// framePipe carries frames one way between two Conns in one process.
type framePipe struct {
	mu     sync.Mutex
	more   *sync.Cond
	q      []Frame
	closed bool
}

func newFramePipe() *framePipe {
	p := &framePipe{}
	p.more = sync.NewCond(&p.mu)
	return p
}

func (p *framePipe) put(fs ...Frame) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return transport.ErrClosed
	}
	p.q = append(p.q, fs...)
	p.more.Signal()
	return nil
}

func (p *framePipe) get() (Frame, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.q) == 0 {
		if p.closed {
			return nil, io.EOF
		}
		p.more.Wait()
	}
	f := p.q[0]
	p.q[0] = nil
	p.q = p.q[1:]
	return f, nil
}

func (p *framePipe) close() {
	p.mu.Lock()
	p.closed = true
	p.more.Broadcast()
	p.mu.Unlock()
}

// NewConnPipe returns two Conns connected in this process: a frame written
// on one is read from the other as the same value, with no encoding. It
// serves a client and a server that run in one process. Frames are not
// copied: a writer must not change a frame after writing it. Size limits
// do not apply.
func NewConnPipe() (a, b *Conn) {
	ab, ba := newFramePipe(), newFramePipe()
	return &Conn{in: ba, out: ab}, &Conn{in: ab, out: ba}
}

// NewConn returns a Conn reading from r and writing to w. c, if not nil, is
// closed by Close. maxFrame <= 0 means [MaxFrameSize].
func NewConn(r io.Reader, w io.Writer, c io.Closer, maxFrame int) *Conn {
	if maxFrame <= 0 {
		maxFrame = MaxFrameSize
	}
	return &Conn{r: bufio.NewReaderSize(r, 64<<10), w: w, closer: c, max: maxFrame}
}

// Read returns the next frame. Decoding errors wrap [ErrProtocol]; an
// over-long line returns [ErrFrameTooLarge] and breaks the connection.
func (c *Conn) Read() (Frame, error) {
	if c.in != nil {
		return c.in.get()
	}
	line, err := c.ReadLine()
	if err != nil {
		return nil, err
	}
	return Decode(line)
}

// ReadLine returns the next raw line without its newline. The slice is
// valid until the next call.
func (c *Conn) ReadLine() ([]byte, error) {
	if c.broken != nil {
		return nil, c.broken
	}
	c.line = c.line[:0]
	for {
		chunk, err := c.r.ReadSlice('\n')
		if len(c.line)+len(chunk) > c.max+1 {
			c.broken = fmt.Errorf("%w (%d bytes)", ErrFrameTooLarge, c.max)
			return nil, c.broken
		}
		c.line = append(c.line, chunk...)
		switch {
		case err == nil:
			return c.line[:len(c.line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(c.line) > 0:
			c.broken = fmt.Errorf("%w: stream ended inside a frame", ErrProtocol)
			return nil, c.broken
		default:
			return nil, err
		}
	}
}

// Write sends one frame.
func (c *Conn) Write(f Frame) error {
	if c.out != nil {
		return c.out.put(f)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf.Reset()
	if err := appendFrame(&c.wbuf, f); err != nil {
		return err
	}
	if c.wbuf.Len() > c.max+1 {
		return fmt.Errorf("%w: outgoing %s frame of %d bytes", ErrFrameTooLarge, f.Kind(), c.wbuf.Len())
	}
	_, err := c.w.Write(c.wbuf.Bytes())
	if c.wbuf.Cap() > 1<<20 {
		c.wbuf = bytes.Buffer{} // do not pin a large buffer
	}
	return err
}

// WriteBatch sends several frames with one write, so that the peer is
// woken once for all of them.
func (c *Conn) WriteBatch(frames ...Frame) error {
	if c.out != nil {
		return c.out.put(frames...)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf.Reset()
	for _, f := range frames {
		start := c.wbuf.Len()
		if err := appendFrame(&c.wbuf, f); err != nil {
			return err
		}
		if c.wbuf.Len()-start > c.max+1 {
			return fmt.Errorf("%w: outgoing %s frame of %d bytes", ErrFrameTooLarge, f.Kind(), c.wbuf.Len()-start)
		}
	}
	_, err := c.w.Write(c.wbuf.Bytes())
	if c.wbuf.Cap() > 1<<20 {
		c.wbuf = bytes.Buffer{}
	}
	return err
}

// Close closes the underlying stream.
func (c *Conn) Close() error {
	var err error
	c.closeMu.Do(func() {
		if c.out != nil {
			c.out.close()
			c.in.close()
		}
		if c.closer != nil {
			err = c.closer.Close()
		}
	})
	return err
}

// WriteLine sends one pre-encoded frame line, which must be a single JSON
// object followed by "\n". It is meant for peers that extend a frame with
// keys of their own, such as the sandbox server talking to its worker.
func (c *Conn) WriteLine(line []byte) error {
	if len(line) == 0 || line[len(line)-1] != '\n' || bytes.IndexByte(line[:len(line)-1], '\n') >= 0 {
		return fmt.Errorf("%w: WriteLine needs exactly one line", ErrProtocol)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(line)
	return err
}
