// Package slowinit is a package whose initializer spends 40 ms, as one
// that connects a client or loads a model might.
package slowinit

import "time"

func init() {
	deadline := time.Now().Add(40 * time.Millisecond)
	for time.Now().Before(deadline) {
	}
}
