package docker_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/adk-codemode/codemode/backend/docker"
	"github.com/adk-codemode/codemode/transport"
)

// engineView reads the engine's containers directly, to check what the
// backend left there.
type engineView struct{ cli *client.Client }

func engineClient(t *testing.T, b *docker.Backend) engineView {
	t.Helper()
	cli, err := client.New(client.WithHost(b.Host()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return engineView{cli}
}

// mine lists the sandbox containers owned by the process pid on this host.
func (e engineView) mine(t *testing.T, pid int) []string {
	t.Helper()
	res, err := e.cli.ContainerList(t.Context(), client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", "io.codemode.sandbox")})
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	var ids []string
	for _, c := range res.Items {
		if strings.HasPrefix(c.Labels["io.codemode.owner"], fmt.Sprintf("%s/%d/", host, pid)) {
			ids = append(ids, c.ID[:12]+" "+string(c.State))
		}
	}
	return ids
}

const helperEnv = "CODEMODE_DOCKER_HOLD_SESSION"

// TestHoldSession is the host process that TestHostSIGKILLLeavesNoContainer
// kills: it opens a session, runs a block that never ends, and waits.
func TestHoldSession(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("run by TestHostSIGKILLLeavesNoContainer")
	}
	b := engine(t, docker.Config{})
	s, err := b.Open(t.Context(), transport.SessionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = s.Exec(context.Background(), transport.Block{Code: "while True:\n    pass"}) }()
	time.Sleep(500 * time.Millisecond)
	fmt.Println("holding")
	time.Sleep(5 * time.Minute)
}

// TestHostSIGKILLLeavesNoContainer kills a host process that holds a
// session running a busy loop; its container is gone soon after, and at the
// latest once the next backend's first Open has cleaned up.
func TestHostSIGKILLLeavesNoContainer(t *testing.T) {
	b := engine(t, docker.Config{})
	eng := engineClient(t, b)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldSession$", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"=1", "DOCKER_HOST="+b.Host())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	held := false
	for lines.Scan() {
		if lines.Text() == "holding" {
			held = true
			break
		}
	}
	if !held {
		t.Fatal("the helper process did not open its session")
	}
	pid := cmd.Process.Pid
	if n := len(eng.mine(t, pid)); n != 1 {
		t.Fatalf("%d containers of the helper while it holds its session, want 1", n)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()

	// The next backend cleans up whatever is left at its first start.
	next, err := docker.New(docker.Config{Host: b.Host(), Image: os.Getenv(imageEnv)})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	s, err := next.Open(t.Context(), transport.SessionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if left := eng.mine(t, pid); len(left) != 0 {
		t.Fatalf("containers of the killed host process after the next start: %v", left)
	}
}
