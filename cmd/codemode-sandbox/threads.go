package main

import (
	"runtime"
	"sync"
)

// spareThreads is how many OS threads the server starts before the
// session. The Go runtime keeps a thread that a goroutine leaves idle and
// reuses it, so the server has these at hand when a fork bomb in the code
// has used up the container's task limit, where starting a new thread
// would fail and end the server.
const spareThreads = 24

// startSpareThreads makes the runtime hold spareThreads idle threads.
func startSpareThreads() {
	var started, release sync.WaitGroup
	started.Add(spareThreads)
	release.Add(1)
	var done sync.WaitGroup
	done.Add(spareThreads)
	for range spareThreads {
		go func() {
			defer done.Done()
			runtime.LockOSThread() // each on a thread of its own
			started.Done()
			release.Wait()
			runtime.UnlockOSThread() // the thread goes idle, not away
		}()
	}
	started.Wait()
	release.Done()
	done.Wait()
}
