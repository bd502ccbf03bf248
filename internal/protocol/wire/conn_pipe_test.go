package wire

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/transport"
)

func TestConnPipe(t *testing.T) {
	a, b := NewConnPipe()
	run := &RunFrame{ID: "b1", Code: "print(1)"}
	if err := a.Write(run); err != nil {
		t.Fatal(err)
	}
	if err := a.WriteBatch(&DoneFrame{ID: "b1"}, &OutputFrame{ID: "b1", Stdout: "1\n"}); err != nil {
		t.Fatal(err)
	}
	// Frames arrive in order, as the values written.
	for _, want := range []Frame{run, nil, nil} {
		f, err := b.Read()
		if err != nil {
			t.Fatal(err)
		}
		if want != nil && f != want {
			t.Errorf("got %#v, want the frame written", f)
		}
	}
	// The other direction is independent.
	go func() { time.Sleep(10 * time.Millisecond); _ = b.Write(&ShutdownFrame{}) }()
	if f, err := a.Read(); err != nil || f.Kind() != KindShutdown {
		t.Fatalf("got %v, %v", f, err)
	}
	// Closing one end ends reads on both and fails writes to it.
	done := make(chan error, 1)
	go func() { _, err := b.Read(); done <- err }()
	time.Sleep(10 * time.Millisecond)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, io.EOF) {
			t.Errorf("read after the peer closed: %v, want io.EOF", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a read was not ended by the peer's Close")
	}
	if err := b.Write(&ShutdownFrame{}); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("write after Close: %v, want ErrClosed", err)
	}
	if _, err := a.Read(); !errors.Is(err, io.EOF) {
		t.Errorf("read on the closed end: %v, want io.EOF", err)
	}
}
