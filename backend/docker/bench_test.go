package docker_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/adk-codemode/codemode/backend/docker"
	"github.com/adk-codemode/codemode/backend/warm"
	"github.com/adk-codemode/codemode/internal/testsupport/sessionbench"
	"github.com/adk-codemode/codemode/transport"
)

// dockerRunPass is `docker run --rm IMAGE python3 -c pass` through the
// engine's API, as the docker CLI does it: create with auto-remove,
// attach the output, start, and wait for the exit.
func dockerRunPass(b *testing.B, cli *client.Client, image string) {
	ctx := context.Background()
	res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: image, Entrypoint: []string{"python3"}, Cmd: []string{"-c", "pass"}, AttachStdout: true, AttachStderr: true},
		HostConfig: &container.HostConfig{AutoRemove: true},
	})
	if err != nil {
		b.Fatal(err)
	}
	hj, err := cli.ContainerAttach(ctx, res.ID, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		b.Fatal(err)
	}
	defer hj.Close()
	w := cli.ContainerWait(ctx, res.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, hj.Reader)
	select {
	case r := <-w.Result:
		if r.StatusCode != 0 {
			b.Fatalf("python3 -c pass exited %d", r.StatusCode)
		}
	case err := <-w.Error:
		b.Fatal(err)
	}
}

// BenchmarkSessionColdStart opens a session (a fresh container, ready to
// run code) against `docker run --rm IMAGE python3 -c pass` through the
// same engine in the same loop, and reports both medians and their ratio.
func BenchmarkSessionColdStart(b *testing.B) {
	be := engine(b, docker.Config{})
	cli, err := client.New(client.WithHost(be.Host()))
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	image := be.Name()[len("docker:"):]
	var bare, sess []time.Duration
	for b.Loop() {
		t0 := time.Now()
		dockerRunPass(b, cli, image)
		bare = append(bare, time.Since(t0))

		t0 = time.Now()
		s, err := be.Open(context.Background(), transport.SessionConfig{})
		if err != nil {
			b.Fatal(err)
		}
		sess = append(sess, time.Since(t0))
		b.StopTimer()
		_ = s.Close()
		b.StartTimer()
	}
	mb, ms := sessionbench.Median(bare), sessionbench.Median(sess)
	b.ReportMetric(sessionbench.Millis(mb), "docker-run-ms")
	b.ReportMetric(sessionbench.Millis(ms), "session-ms")
	b.ReportMetric(float64(ms)/float64(mb), "ratio")
}

// BenchmarkSessionStartPooled takes sessions from a pool that started
// their containers ahead; each round waits, untimed, for the pool to refill.
func BenchmarkSessionStartPooled(b *testing.B) {
	p := &warm.Pool{Backend: engine(b, docker.Config{}), Size: 1}
	defer p.Close()
	// The pool fills for the files of the sessions it was asked for.
	s, err := p.Open(context.Background(), transport.SessionConfig{})
	if err != nil {
		b.Fatal(err)
	}
	_ = s.Close()
	var lat []time.Duration
	for b.Loop() {
		b.StopTimer()
		for deadline := time.Now().Add(60 * time.Second); p.Ready() == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatal("the pool did not fill")
			}
		}
		b.StartTimer()
		t0 := time.Now()
		s, err := p.Open(context.Background(), transport.SessionConfig{})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		b.StopTimer()
		_ = s.Close()
		b.StartTimer()
	}
	b.ReportMetric(sessionbench.Millis(sessionbench.Median(lat)), "median-ms")
}

// BenchmarkWarmPrint runs print(1) blocks in one warm session.
func BenchmarkWarmPrint(b *testing.B) {
	s, err := engine(b, docker.Config{}).Open(context.Background(), transport.SessionConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	sessionbench.BenchWarmPrint(b, s)
}

// BenchmarkToolCall makes no-op tool calls from Python in the container to
// a Go handler on the host and back; Python times each call.
func BenchmarkToolCall(b *testing.B) {
	s, err := engine(b, docker.Config{}).Open(context.Background(), transport.SessionConfig{Tools: sessionbench.NoopTools})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	sessionbench.BenchToolCall(b, s)
}
