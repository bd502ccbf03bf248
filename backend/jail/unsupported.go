//go:build !linux || !amd64

package jail

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/adk-codemode/codemode/egress"
	"github.com/adk-codemode/codemode/internal/host/launch"
)

// Cmd is a running jail. On this platform jails cannot be built.
type Cmd struct{}

func unsupported() error {
	return fmt.Errorf("%w (this is %s/%s)", ErrUnsupported, runtime.GOOS, runtime.GOARCH)
}

// Start returns an error wrapping [ErrUnsupported] on this platform.
func Start(ctx context.Context, cfg Config, spec Spec) (*Cmd, error) { return nil, unsupported() }

// Check returns an error wrapping [ErrUnsupported] on this platform.
func Check(ctx context.Context, cfg Config) (Report, error) { return Report{}, unsupported() }

// Wait returns an error wrapping [ErrUnsupported].
func (c *Cmd) Wait() error { return unsupported() }

// Kill returns an error wrapping [ErrUnsupported].
func (c *Cmd) Kill() error { return unsupported() }

// Pid returns 0.
func (c *Cmd) Pid() int { return 0 }

func (c *Cmd) memoryKills() (int, int64, bool) { return 0, 0, false }

// Enforced returns the zero Enforcement: nothing is enforced.
func (c *Cmd) Enforced() Enforcement { return Enforcement{} }

// Usage returns the zero Usage.
func (c *Cmd) Usage() Usage { return Usage{} }

func (c *Cmd) cleanupErr() error { return nil }

// zygote is a template process, which this platform has none of.
type zygote struct{}

func (*zygote) refill() {}

func forkSession(context.Context, Config, launch.Command, *os.File) (*Cmd, *zygote, error) {
	return nil, nil, unsupported()
}

func startEgress(egress.Policy) (*os.File, *egress.Proxy, error) { return nil, nil, unsupported() }

func closeZygote(Config) error { return nil }

// CheckForked returns an error wrapping [ErrUnsupported] on this platform.
func CheckForked(ctx context.Context, cfg Config) (Enforcement, time.Duration, error) {
	return Enforcement{}, 0, unsupported()
}
