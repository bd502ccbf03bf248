package sessionbench

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// pinThread locks the calling goroutine to its thread and the thread to
// cpu, unless cpu is -1; the function it returns undoes both.
func pinThread(cpu int) func() {
	if cpu < 0 {
		return func() {}
	}
	runtime.LockOSThread()
	var old, set unix.CPUSet
	_ = unix.SchedGetaffinity(0, &old)
	set.Set(cpu)
	_ = unix.SchedSetaffinity(0, &set)
	return func() {
		_ = unix.SchedSetaffinity(0, &old)
		runtime.UnlockOSThread()
	}
}
