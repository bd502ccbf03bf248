package transport

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
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
