package docker

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

// TestRemoveOrphans makes containers as a dead host process and a live one
// would leave them: only the dead one's is removed.
func TestRemoveOrphans(t *testing.T) {
	b, err := New(Config{Image: os.Getenv("CODEMODE_DOCKER_IMAGE")})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.connect(t.Context()); err != nil {
		hostcap.Missing(t, hostcap.Docker, err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	make := func(owner string) string {
		req := b.request(nil, nil)
		req.Config.Labels[labelOwner] = owner
		res, err := b.cli.ContainerCreate(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = removeContainer(context.Background(), b.cli, res.ID) })
		return res.ID
	}
	deadID := make(host + "/" + strconv.Itoa(dead.Process.Pid) + "/1")
	reusedID := make(host + "/" + strconv.Itoa(os.Getpid()) + "/" + "999999999999")
	liveID := make(thisOwner())
	otherHostID := make("another-host-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "/1/1")

	if _, err := b.RemoveOrphans(t.Context()); err != nil {
		t.Fatal(err)
	}
	exists := func(id string) bool {
		_, err := b.cli.ContainerInspect(t.Context(), id, client.ContainerInspectOptions{})
		return err == nil
	}
	for _, c := range []struct {
		name string
		id   string
		kept bool
	}{{"dead owner", deadID, false}, {"pid reused by another process", reusedID, false}, {"live owner", liveID, true}, {"another host", otherHostID, true}} {
		if exists(c.id) != c.kept {
			t.Errorf("%s: kept = %v, want %v", c.name, !c.kept, c.kept)
		}
	}
}
