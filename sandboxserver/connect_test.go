package sandboxserver_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/adk-codemode/codemode/internal/hostcap"
	"github.com/adk-codemode/codemode/transport"
	"github.com/adk-codemode/codemode/transport/transporttest"
)

// TestABackendOfYourOwn holds the example backend, processBackend, to the
// contract every backend meets: Connect is all a backend of one's own
// needs of this library.
func TestABackendOfYourOwn(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		hostcap.Missing(t, hostcap.Python, err)
	}
	if _, err := exec.LookPath("go"); err != nil {
		hostcap.Missing(t, hostcap.GoCommand, "to build the codemode-sandbox command: ", err)
	}
	bin := filepath.Join(t.TempDir(), "codemode-sandbox")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/codemode-sandbox").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatal(err)
	}
	transporttest.Run(t, func(t *testing.T) transport.Backend { return &processBackend{bin: bin, python: python} }, transporttest.Options{})
}
