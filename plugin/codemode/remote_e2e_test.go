package codemode

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/adk-codemode/codemode/backend/remote"
	"github.com/adk-codemode/codemode/internal/testsupport/adksuite"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

// TestTurnThroughRemoteBackend runs a turn whose code calls tools through
// the remote backend: the generated tools package travels over the
// WebSocket to a real codemode-sandbox --listen process on 127.0.0.1,
// started for the session and gone after it.
func TestTurnThroughRemoteBackend(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		hostcap.Missing(t, hostcap.Python, err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "codemode-sandbox")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/adk-codemode/codemode/cmd/codemode-sandbox").CombinedOutput(); err != nil {
		t.Fatalf("build the server: %v\n%s", err, out)
	}
	secret := []byte("plugin-e2e-secret-0123456789")
	var mu sync.Mutex
	var servers []chan struct{} // closed when each server has exited
	provision := func(ctx context.Context) (string, func(), error) {
		ws, err := os.MkdirTemp(dir, "ws-")
		if err != nil {
			return "", nil, err
		}
		cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--python", "/usr/bin/python3", "--workdir", ws)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + ws, "CODEMODE_SANDBOX_TOKEN=" + string(secret)}
		pipe, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			return "", nil, err
		}
		exited := make(chan struct{})
		mu.Lock()
		servers = append(servers, exited)
		mu.Unlock()
		addr := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(pipe)
			for sc.Scan() {
				if a, ok := strings.CutPrefix(sc.Text(), "codemode-sandbox: listening on "); ok {
					addr <- a
				}
			}
			_ = cmd.Wait()
			close(exited)
		}()
		release := func() {
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		}
		select {
		case a := <-addr:
			return "ws://" + a, release, nil
		case <-exited:
			return "", nil, fmt.Errorf("the server exited before listening")
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			return "", nil, fmt.Errorf("the server did not listen")
		}
	}
	b, err := remote.New(remote.Config{Provision: provision, Secret: secret})
	if err != nil {
		t.Fatal(err)
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
	// The turn is over: every sandbox provisioned for it (the turn's, and
	// the one that reported the environment) has exited.
	mu.Lock()
	defer mu.Unlock()
	if len(servers) == 0 {
		t.Fatal("no sandbox was provisioned")
	}
	for i, exited := range servers {
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			t.Errorf("sandbox %d of %d did not exit after the turn", i+1, len(servers))
		}
	}
}
