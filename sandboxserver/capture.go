//go:build linux

package sandboxserver

import (
	"bytes"
	"io"
	"sync"
)

// capture reads one output stream of the worker (fd 1 or 2, shared with
// every process the code starts) and keeps a bounded view of it per block:
// the first half of the budget and the last half, with a count of the bytes
// dropped between them. A block's output ends at its marker, which the
// worker writes to the stream after the block; so output that a child
// process wrote before the block ended is never lost to the next block.
type capture struct {
	mu      sync.Mutex
	limit   int64
	head    []byte
	tail    []byte // ring buffer once full
	tailPos int
	dropped int64
	marker  []byte
	found   chan struct{} // closed when marker is seen
	pending []byte        // bytes that might start a marker
	eof     chan struct{}
}

func newCapture(r io.Reader, limit int64) *capture {
	c := &capture{limit: limit, eof: make(chan struct{})}
	go c.read(r)
	return c
}

// expect arms the capture for a block ending at marker, with a byte budget.
func (c *capture) expect(marker string, limit int64) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.marker = []byte(marker)
	c.limit = limit
	c.found = make(chan struct{})
	return c.found
}

func (c *capture) read(r io.Reader) {
	defer close(c.eof)
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.feed(buf[:n])
		}
		if err != nil {
			c.mu.Lock()
			c.append(c.pending)
			c.pending = nil
			c.mu.Unlock()
			return
		}
	}
}

func (c *capture) feed(chunk []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	data := chunk
	if len(c.pending) > 0 {
		data = append(c.pending, chunk...)
		c.pending = nil
	}
	for len(c.marker) > 0 {
		i := bytes.Index(data, c.marker)
		if i < 0 {
			break
		}
		c.append(data[:i])
		data = data[i+len(c.marker):]
		c.marker = nil
		close(c.found)
	}
	if m := len(c.marker); m > 0 {
		// Hold back a possible marker prefix until the next chunk.
		keep := min(m-1, len(data))
		for keep > 0 && !bytes.HasPrefix(c.marker, data[len(data)-keep:]) {
			keep--
		}
		c.pending = append([]byte(nil), data[len(data)-keep:]...)
		data = data[:len(data)-keep]
	}
	c.append(data)
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
