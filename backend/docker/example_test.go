package docker_test

import (
	"context"
	"fmt"
	"log"

	"github.com/adk-codemode/codemode/backend/docker"
	"github.com/adk-codemode/codemode/egress"
	"github.com/adk-codemode/codemode/transport"
)

// A session in a fresh container of the engine at DOCKER_HOST, with the
// image that `make image` builds. (It needs an engine, so it is compiled
// but not run by go test; TestSharedSuite runs the same calls.)
func Example() {
	b, err := docker.New(docker.Config{CPUs: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	e, err := b.Enforced(ctx) // what the engine applies, read back
	if err != nil {
		log.Fatal(err) // names the socket tried, or `make image`
	}
	fmt.Println(e.NetworkMode, e.ReadOnlyRoot, e.MemoryBytes, e.PidsLimit)

	s, err := b.Open(ctx, transport.SessionConfig{Files: map[string][]byte{"tools/__init__.py": []byte("GREETING = 'hello'\n")}})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	r, err := s.Exec(ctx, transport.Block{Code: "from tools import GREETING\nprint(GREETING)"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(r.Stdout)
}

// Code in the container reaches api.example.com over HTTPS, and nothing
// else, through a proxy on this host that the container reaches through a
// socket it mounts. (Compiled, not run; TestEgressReachesAllowedHostsOnly
// runs it against loopback servers.)
func Example_egress() {
	b, err := docker.New(docker.Config{Egress: &egress.Policy{Allow: []string{"api.example.com:443"}}})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	fmt.Println(b.DescribeNetwork()) // what the model is told
	s, err := b.Open(context.Background(), transport.SessionConfig{})
	if err != nil {
		log.Fatal(err) // a TCP engine is refused: the socket is a file of this host
	}
	defer s.Close()
	r, err := s.Exec(context.Background(), transport.Block{Code: `
import urllib.request
print(urllib.request.urlopen("https://api.example.com/status").status)`})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(r.Stdout)
}
