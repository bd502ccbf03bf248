package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/adk-codemode/codemode/internal/both/observe"
	"github.com/adk-codemode/codemode/internal/host/connect"
	"go.opentelemetry.io/otel/attribute"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/adk-codemode/codemode/internal/both/tailbuf"
	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/internal/protocol/wsproto"
	"github.com/adk-codemode/codemode/transport"
)

// Labels on every container the backend creates.
const (
	// labelSandbox marks a codemode sandbox container.
	labelSandbox = "io.codemode.sandbox"
	// labelOwner names the host process that owns it (see owner.go).
	labelOwner = "io.codemode.owner"
)

// Backend starts each session in a fresh container of a Docker Engine API
// (Docker, or podman's system service), attached over its standard streams.
type Backend struct {
	cfg Config
	ep  endpoint
	cli *client.Client

	engineOnce sync.Once
	engine     engineInfo
	engineErr  error
	seccomp    string // the security option that gives a container the sandbox's seccomp profile
}

var _ transport.Backend = (*Backend)(nil)

// engineInfo is what the backend learnt from the engine once.
type engineInfo struct {
	name, version string
	podman        bool
}

// New checks cfg and returns a backend. It does not contact the engine:
// the first Open does, and removes the containers that a host process that
// died left behind ([Backend.RemoveOrphans]).
func New(cfg Config) (*Backend, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	ep, err := resolveEndpoint(cfg.Host, os.Getenv)
	if err != nil {
		return nil, err
	}
	cli, err := client.New(ep.clientOpts()...) // the client negotiates the API version
	if err != nil {
		return nil, fmt.Errorf("docker: the engine address %s (from %s): %w", ep.host, ep.source, err)
	}
	return &Backend{cfg: cfg, ep: ep, cli: cli}, nil
}

// Close releases the backend's connections to the engine. Sessions still
// open keep theirs.
func (b *Backend) Close() error { return b.cli.Close() }

// Name is "docker:" and the image.
func (b *Backend) Name() string { return "docker:" + b.cfg.Image }

// DescribeNetwork says what code in the container reaches
// ([transport.NetworkDescriber]): the hosts Config.Egress allows, through
// the proxy, or no network at all. The network mode is always none.
func (b *Backend) DescribeNetwork() string {
	if b.cfg.Egress == nil {
		return transport.NoNetwork
	}
	return b.cfg.Egress.Describe()
}

// Host is the engine address the backend uses.
func (b *Backend) Host() string { return b.cli.DaemonHost() }

// HostSource says where [Backend.Host] came from: "Config.Host",
// "DOCKER_HOST", a docker CLI context and what named it (for example
// `context "ci" (DOCKER_CONTEXT)`), or "the default socket".
func (b *Backend) HostSource() string { return b.ep.source }

// connect reaches the engine once: it negotiates the API version, learns
// which engine it is, and removes orphaned containers.
func (b *Backend) connect(ctx context.Context) error {
	b.engineOnce.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		v, err := b.cli.ServerVersion(ctx, client.ServerVersionOptions{})
		if err != nil {
			b.engineErr = b.unreachable(err)
			return
		}
		b.engine = engineInfo{name: "Docker Engine", version: v.Version}
		for _, c := range v.Components {
			if strings.Contains(strings.ToLower(c.Name), "podman") {
				b.engine = engineInfo{name: "Podman", version: c.Version, podman: true}
			}
		}
		if b.seccomp, b.engineErr = seccompOption(b.engine.podman, b.cli.DaemonHost()); b.engineErr != nil {
			return
		}
		if n, err := b.RemoveOrphans(ctx); err != nil {
			b.cfg.Logger.Warn("docker: removing containers left behind failed", "err", err)
		} else if n > 0 {
			b.cfg.Logger.Info("docker: removed containers left behind by host processes that died", "count", n)
		}
	})
	return b.engineErr
}

// unreachable explains an engine that did not answer.
func (b *Backend) unreachable(err error) error {
	return fmt.Errorf("docker: cannot reach the engine at %s (from %s): %w; start Docker, or point DOCKER_HOST (or Config.Host, or a docker context) at a running engine's socket "+
		"(for podman: podman system service --time 0 unix:///run/podman.sock, then DOCKER_HOST=unix:///run/podman.sock)", b.cli.DaemonHost(), b.ep.source, err)
}

// Open starts a session in a fresh container.
func (b *Backend) Open(ctx context.Context, scfg transport.SessionConfig) (transport.Session, error) {
	if err := b.checkEgress(); err != nil {
		return nil, err
	}
	if err := b.connect(ctx); err != nil {
		return nil, err
	}
	observe.Event(ctx, "codemode.sandbox.engine_connected")
	preamble, err := encodePreamble(scfg.Files, wsproto.FileLimits{MaxBytes: b.cfg.MaxFilesBytes, MaxFiles: b.cfg.MaxFiles})
	if err != nil {
		return nil, fmt.Errorf("docker: the session's files: %w", err)
	}
	var eh *egressHost
	if b.cfg.Egress != nil {
		if eh, err = b.startEgress(); err != nil {
			return nil, err
		}
	}
	c, err := b.create(ctx, []string{"--files-over-stdin"}, eh)
	if err != nil {
		if eh != nil {
			_ = eh.stop()
		}
		return nil, err
	}
	observe.Event(ctx, "codemode.sandbox.container_created", attribute.String("codemode.docker.image", b.cfg.Image), attribute.String("codemode.docker.container", shortID(c.id)))
	s, err := b.attach(ctx, c, preamble, scfg)
	if err != nil {
		_ = c.remove()
		if eh != nil {
			_ = eh.stop()
		}
		return nil, err
	}
	if eh != nil {
		return &session{Session: s, egress: eh}, nil
	}
	return s, nil
}

// box is one container, with its egress proxy if it has one.
type box struct {
	b      *Backend
	id     string
	egress *egressHost
}

// create creates a container with the backend's limits (and eh's mount:
// nil for none) and checks that the engine applied them.
func (b *Backend) create(ctx context.Context, args []string, eh *egressHost) (*box, error) {
	req := b.request(args, eh)
	res, err := b.cli.ContainerCreate(ctx, req)
	if err != nil {
		switch {
		case cerrdefs.IsNotFound(err):
			return nil, fmt.Errorf("docker: the image %s is not in the engine at %s: build it with `make image` in the codemode repository (images/README.md), or set Config.Image: %w", b.cfg.Image, b.cli.DaemonHost(), err)
		case client.IsErrConnectionFailed(err):
			return nil, b.unreachable(err)
		}
		return nil, fmt.Errorf("docker: the engine refused the sandbox container (its limits: %s): %w; lower or unset the limit it names in docker.Config", b.describeLimits(), err)
	}
	c := &box{b: b, id: res.ID, egress: eh}
	for _, w := range res.Warnings {
		b.cfg.Logger.Warn("docker: the engine warned about the sandbox container", "container", shortID(c.id), "warning", w)
	}
	got, err := b.inspect(ctx, c.id)
	if err != nil {
		_ = c.remove()
		return nil, err
	}
	if err := b.want(eh).check(got); err != nil {
		_ = c.remove()
		return nil, err
	}
	return c, nil
}

// attach starts the container attached over its standard streams, sends
// the files preamble and waits for the ready frame.
func (b *Backend) attach(ctx context.Context, c *box, preamble []byte, scfg transport.SessionConfig) (*wire.Client, error) {
	hj, err := b.attachStreams(ctx, c.id)
	if err != nil {
		return nil, err
	}
	if _, err := b.cli.ContainerStart(ctx, c.id, client.ContainerStartOptions{}); err != nil {
		hj.Close()
		return nil, fmt.Errorf("docker: the engine did not start the sandbox container (its limits: %s): %w; lower or unset the limit it names in docker.Config", b.describeLimits(), err)
	}
	observe.Event(ctx, "codemode.sandbox.container_started")
	stderr := &tailbuf.Buffer{Max: 16 << 10}
	stdout, stdoutW := io.Pipe()
	demuxed := make(chan struct{})
	go func() {
		defer close(demuxed)
		_, err := stdcopy.StdCopy(stdoutW, stderr, hj.Reader)
		if err == nil {
			err = io.EOF
		}
		stdoutW.CloseWithError(err)
	}()
	s, err := connect.Stream(ctx, stdout, hj.Conn, &attached{hj: hj}, scfg, connect.Options{
		Preamble:     preamble,
		ReadyTimeout: b.cfg.ReadyTimeout,
		Logger:       b.cfg.Logger,
		OnClose: func() error {
			<-demuxed
			return c.stop()
		},
	})
	if err != nil {
		return nil, fmt.Errorf("docker: the sandbox in container %s did not start: %w%s", shortID(c.id), err, tailOf(stderr))
	}
	return s, nil
}

// attachStreams attaches to a created container's standard streams. An
// engine under load may refuse it with a conflict while the container is
// still being set up (podman answers 409); that is tried again a few times.
func (b *Backend) attachStreams(ctx context.Context, id string) (client.ContainerAttachResult, error) {
	var err error
	for attempt := range 5 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return client.ContainerAttachResult{}, fmt.Errorf("docker: attach to the sandbox container: %w (after: %w)", ctx.Err(), err)
			case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
			}
		}
		var hj client.ContainerAttachResult
		hj, err = b.cli.ContainerAttach(ctx, id, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
		if err == nil {
			return hj, nil
		}
		state := "unknown"
		if res, ierr := b.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); ierr == nil && res.Container.State != nil {
			state = string(res.Container.State.Status)
		}
		err = fmt.Errorf("%w (the container is %s)", err, state)
		if state != "created" {
			break
		}
		b.cfg.Logger.Warn("docker: attaching to the sandbox container failed; trying again", "container", shortID(id), "attempt", attempt+1, "err", err)
	}
	return client.ContainerAttachResult{}, fmt.Errorf("docker: attach to the sandbox container: %w", err)
}

// attached is the container's attached stream: closing it closes the
// container's standard input, which ends the session's server.
type attached struct {
	hj   client.ContainerAttachResult
	once sync.Once
}

func (a *attached) Close() error {
	a.once.Do(func() {
		_ = a.hj.CloseWrite()
		a.hj.Close()
	})
	return nil
}

// stop waits for the container's server to exit after its standard input
// closed, kills it if it has not within Config.StopTimeout, and removes
// it, then stops its egress proxy: when stop returns, the container and
// the proxy's directory are gone.
func (c *box) stop() error {
	err := c.stopContainer()
	if c.egress != nil {
		err = errors.Join(err, c.egress.stop())
	}
	return err
}

func (c *box) stopContainer() error {
	ctx, cancel := context.WithTimeout(context.Background(), c.b.cfg.StopTimeout)
	w := c.b.cli.ContainerWait(ctx, c.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-w.Result:
	case err := <-w.Error: // the removal below reports what matters
		c.b.cfg.Logger.Debug("docker: waiting for the container to exit", "container", shortID(c.id), "err", err)
	case <-ctx.Done():
	}
	cancel()
	return c.remove()
}

// remove removes the container, killing it if it runs, and waits until
// the engine no longer knows it.
func (c *box) remove() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return removeContainer(ctx, c.b.cli, c.id)
}

func removeContainer(ctx context.Context, cli *client.Client, id string) error {
	for {
		_, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err == nil || cerrdefs.IsNotFound(err) {
			// Auto-remove may still be under way: wait until it is gone.
			if _, ierr := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); cerrdefs.IsNotFound(ierr) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("docker: remove container %s: %w (last: %w); remove it with `docker rm -f %s`", shortID(id), ctx.Err(), err, shortID(id))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func newName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "codemode-" + hex.EncodeToString(b[:])
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func tailOf(b *tailbuf.Buffer) string {
	if msg := strings.TrimSpace(b.String()); msg != "" {
		return "\n" + msg
	}
	return ""
}

// encodePreamble is the files preamble that opens the container's
// standard input.
func encodePreamble(files map[string][]byte, lim wsproto.FileLimits) ([]byte, error) {
	var buf strings.Builder
	if err := wsproto.WriteFilesPreamble(&buf, files, lim); err != nil {
		return nil, err
	}
	return []byte(buf.String()), nil
}
