package remote_test

import (
	"context"
	"os"

	"github.com/adk-codemode/codemode/backend/remote"
	"github.com/adk-codemode/codemode/backend/warm"
)

// A backend for a platform that hands out one sandbox per claim: the
// provisioner claims a sandbox for each session and releases it after.
// (For a sandbox server at a fixed address, set URL instead.)
func ExampleNew() {
	claims := func(ctx context.Context) (string, func(), error) {
		// Ask the platform for a fresh sandbox here.
		return "https://sandbox-7f3a.example.com", func() { /* give it back */ }, nil
	}
	b, err := remote.New(remote.Config{
		Provision: claims,
		Secret:    []byte(os.Getenv("CODEMODE_REMOTE_TOKEN")),
	})
	if err != nil {
		panic(err)
	}
	// Pool keeps a session started ahead of need.
	pool := &warm.Pool{Backend: b, Size: 2}
	defer pool.Close()
	_ = pool // pool.Open(ctx, cfg) hands over a ready session
}
