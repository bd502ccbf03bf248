package tailbuf

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestKeepsTheEnd(t *testing.T) {
	b := &Buffer{Max: 10}
	for i := range 5 {
		fmt.Fprintf(b, "line%d\n", i)
	}
	if got := b.String(); got != "ne3\nline4\n" {
		t.Errorf("got %q", got)
	}
	b.Write([]byte(strings.Repeat("x", 25) + "end"))
	if got := b.String(); got != "xxxxxxxend" {
		t.Errorf("got %q", got)
	}
}

func TestConcurrent(t *testing.T) {
	b := &Buffer{Max: 64}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				b.Write([]byte("abcdefgh"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got := b.String(); len(got) != 64 {
		t.Errorf("kept %d bytes, want 64", len(got))
	}
}
