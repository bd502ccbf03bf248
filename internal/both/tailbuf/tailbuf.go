package tailbuf

import "sync"

// Buffer is an io.Writer that keeps the last Max bytes written to it. It
// is safe for concurrent use.
type Buffer struct {
	Max int

	mu  sync.Mutex
	buf []byte
}

// Write keeps the end of p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.Max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.Max:]...)
	}
	return len(p), nil
}

// String returns what is kept.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
