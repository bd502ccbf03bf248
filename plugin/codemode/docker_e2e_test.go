package codemode

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/moby/moby/client"

	"github.com/adk-codemode/codemode/backend/docker"
	"github.com/adk-codemode/codemode/internal/testsupport/adksuite"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

// TestTurnThroughDockerBackend runs a turn whose code calls tools through
// the Docker backend: the tools package travels in the files preamble to
// a fresh container of the engine at DOCKER_HOST, which is gone after the
// turn. Without an engine and the image it skips, saying how to run it;
// CODEMODE_REQUIRE_ALL=1 or CODEMODE_REQUIRE_DOCKER=1 makes that a failure
// (see hostcap).
func TestTurnThroughDockerBackend(t *testing.T) {
	b, err := docker.New(docker.Config{Image: os.Getenv("CODEMODE_DOCKER_IMAGE")})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := b.Enforced(ctx); err != nil {
		hostcap.Missing(t, hostcap.Docker, err)
	}
	m := adksuite.NewScript().On("weather?",
		adksuite.Exec(`from tools import get_weather, convert_temperature
w = get_weather(city="Paris")
f = convert_temperature(value=w["temp_c"], unit="F")
print(w["city"], w["temp_c"], f["value"])`),
		adksuite.Say("done"))
	f := newFixture(t, m, fixtureConfig{cfg: Config{Tools: weatherTools(t), Backend: b}})
	out := outputs(f.turn(t.Context(), "s1", "weather?"))
	want := []map[string]any{{"stdout": "Paris 18 64.4\n", "stderr": "", "output_files": []string{}}}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("execute_code results (-want +got):\n%s", diff)
	}
	if err := f.hooks.Close(); err != nil {
		t.Fatal(err)
	}

	// The turn is over: no container of this process is left.
	cli, err := client.New(client.WithHost(b.Host()))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	res, err := cli.ContainerList(t.Context(), client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", "io.codemode.sandbox")})
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	for _, c := range res.Items {
		if strings.HasPrefix(c.Labels["io.codemode.owner"], fmt.Sprintf("%s/%d/", host, os.Getpid())) {
			t.Errorf("container %s (%s) is left after the turn", c.ID[:12], c.State)
		}
	}
}
