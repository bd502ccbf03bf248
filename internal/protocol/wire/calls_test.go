package wire

import (
	"testing"
	"time"
)

// TestRunInlineHandsOver: a call that runs inline for long gets another
// reader started, and the goroutine that ran it is told to stop reading;
// a quick call keeps its goroutine reading and starts nobody.
func TestRunInlineHandsOver(t *testing.T) {
	started := make(chan struct{})
	done := make(chan bool, 1)
	go func() {
		done <- RunInline(func() {
			select {
			case <-started: // the new reader must start while the call runs
			case <-time.After(30 * time.Second):
			}
		}, func() { close(started) })
	}()
	select {
	case keep := <-done:
		if keep {
			t.Error("after a hand-over, the caller was told to keep reading")
		}
	case <-time.After(40 * time.Second):
		t.Fatal("RunInline did not return")
	}
	select {
	case <-started:
	default:
		t.Fatal("a slow call did not start another reader")
	}

	var more int
	if !RunInline(func() {}, func() { more++ }) {
		t.Error("a quick call was told to stop reading")
	}
	time.Sleep(5 * watchEvery)
	if more != 0 {
		t.Error("a quick call started another reader")
	}
}
