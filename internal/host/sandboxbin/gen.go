//go:build ignore

// Gen builds the sandbox program for every architecture the library
// embeds it for and writes the compressed binaries and the toolchain's
// version beside this file. With -check it builds them into a temporary
// directory instead and exits 1 if any differs from the embedded one, 3 if
// the running toolchain is not the one they were built with.
package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// arches are the architectures the program is embedded for.
var arches = []string{"amd64", "arm64"}

func main() {
	check := flag.Bool("check", false, "compare fresh builds with the embedded ones instead of writing")
	flag.Parse()
	want, err := os.ReadFile("stage.version")
	if *check && err == nil && strings.TrimSpace(string(want)) != runtime.Version() {
		fmt.Fprintf(os.Stderr, "the embedded sandbox program was built with %s, this toolchain is %s: check it with that toolchain\n",
			strings.TrimSpace(string(want)), runtime.Version())
		os.Exit(3)
	}
	tmp, err := os.MkdirTemp("", "codemode-stage-build-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(tmp)
	stale := false
	for _, arch := range arches {
		bin := filepath.Join(tmp, "codemode-stage-"+arch)
		cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid=", "-o", bin, "../../sandbox/stage")
		cmd.Env = append(cleanEnv(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0", "GOAMD64=v1", "GOARM64=v8.0")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fail(fmt.Errorf("build for %s: %w", arch, err))
		}
		fresh, err := os.ReadFile(bin)
		if err != nil {
			fail(err)
		}
		name := "codemode-stage.linux-" + arch + ".gz"
		if *check {
			old, err := gunzip(name)
			if err != nil || !bytes.Equal(old, fresh) {
				fmt.Fprintf(os.Stderr, "%s is not the program its sources build (%d bytes built, %d embedded, %v): run go generate ./internal/host/sandboxbin\n", name, len(fresh), len(old), err)
				stale = true
			}
			continue
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(fresh)
		if err := zw.Close(); err != nil {
			fail(err)
		}
		if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
			fail(err)
		}
	}
	if *check {
		if stale {
			os.Exit(1)
		}
		return
	}
	if err := os.WriteFile("stage.version", []byte(runtime.Version()+"\n"), 0o644); err != nil {
		fail(err)
	}
}

// cleanEnv is the environment without what would change the build's bytes
// (flags, experiments, architecture levels).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOFLAGS", "GOEXPERIMENT", "GOOS", "GOARCH", "CGO_ENABLED", "GOAMD64", "GOARM64", "GOTOOLCHAIN":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GOTOOLCHAIN=local")
}

func gunzip(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gen:", err)
	os.Exit(1)
}
