//go:build linux

package wsserve_test

import (
	"context"
	"fmt"
	"net"
	"os"

	"github.com/adk-codemode/codemode/backend/remote"
	"github.com/adk-codemode/codemode/internal/both/server"
	"github.com/adk-codemode/codemode/internal/sandbox/wsserve"
	"github.com/adk-codemode/codemode/transport"
)

// Serve one session on a loopback port and run a block through it with
// the remote backend, the tools package travelling at session start.
func ExampleServe() {
	work, _ := os.MkdirTemp("", "workspace-")
	files, _ := os.MkdirTemp("", "files-")
	defer os.RemoveAll(work)
	defer os.RemoveAll(files)
	secret := []byte("a-secret-of-at-least-16-bytes")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	served := make(chan error, 1)
	go func() {
		served <- wsserve.Serve(context.Background(), ln, wsserve.Config{
			Session: server.Config{Python: "/usr/bin/python3", Workdir: work, FilesDir: files},
			Secret:  secret,
		})
	}()

	b, _ := remote.New(remote.Config{URL: "http://" + ln.Addr().String(), Secret: secret})
	s, err := b.Open(context.Background(), transport.SessionConfig{
		Files: map[string][]byte{"tools/__init__.py": []byte("def double(x):\n    return 2 * x\n")},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := s.Exec(context.Background(), transport.Block{Code: "from tools import double\nprint(double(21))"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(r.Stdout)
	s.Close()
	fmt.Println("server:", <-served)
	// Output:
	// 42
	// server: <nil>
}
