package remote_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/adk-codemode/codemode/backend/remote"
	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/internal/testsupport/sessionbench"
	"github.com/adk-codemode/codemode/transport"
)

// echo is a raw gorilla/websocket echo server on 127.0.0.1 and a client
// of it: the floor that a round trip over a WebSocket costs here.
type echo struct {
	ws  *websocket.Conn
	msg []byte
}

func newEcho(b *testing.B, size int) *echo {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		for {
			typ, m, err := ws.ReadMessage()
			if err != nil || ws.WriteMessage(typ, m) != nil {
				return
			}
		}
	}))
	b.Cleanup(srv.Close)
	d := websocket.Dialer{ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10}
	ws, _, err := d.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	return &echo{ws: ws, msg: bytes.Repeat([]byte("x"), size)}
}

func (e *echo) roundTrip(b *testing.B) time.Duration {
	t0 := time.Now()
	if err := e.ws.WriteMessage(websocket.TextMessage, e.msg); err != nil {
		b.Fatal(err)
	}
	if _, _, err := e.ws.ReadMessage(); err != nil {
		b.Fatal(err)
	}
	return time.Since(t0)
}

// frameSize is the encoded size of a frame, newline included.
func frameSize(f wire.Frame) int {
	var buf bytes.Buffer
	if err := wire.NewConn(nil, &buf, nil, 0).Write(f); err != nil {
		panic(err)
	}
	return buf.Len()
}

func benchSession(b *testing.B, tools transport.ToolHandler) transport.Session {
	srv := startServer(b, nil)
	be, err := remote.New(remote.Config{URL: srv.URL(), Secret: testSecret})
	if err != nil {
		b.Fatal(err)
	}
	s, err := be.Open(context.Background(), transport.SessionConfig{Tools: tools})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkWarmPrint runs print(1) blocks in a warm remote session and, in
// the same loop, a raw WebSocket echo of the run frame's size and the same
// block through the same server on its standard streams, which is the
// path without the WebSocket.
func BenchmarkWarmPrint(b *testing.B) {
	s := benchSession(b, nil)
	st := openStdio(b, nil)
	b.Cleanup(func() { st.Close() })
	e := newEcho(b, frameSize(&wire.RunFrame{ID: "b1", Code: "print(1)", GraceMS: 1000}))
	var lat, floor, pipes []time.Duration
	for b.Loop() {
		lat = append(lat, sessionbench.ExecPrint(b, s))
		floor = append(floor, e.roundTrip(b))
		pipes = append(pipes, sessionbench.ExecPrint(b, st))
	}
	b.ReportMetric(sessionbench.Micros(sessionbench.Median(lat)), "median-µs")
	b.ReportMetric(sessionbench.Micros(sessionbench.Median(floor)), "echo-µs")
	b.ReportMetric(sessionbench.Micros(sessionbench.Median(pipes)), "stdio-µs")
	b.ReportMetric(float64(sessionbench.Median(lat))/float64(sessionbench.Median(floor)), "ratio")
}

// BenchmarkToolCall makes no-op tool calls from Python, timed by Python,
// against raw WebSocket echoes of the tool call frame's size made just
// before and after, and the same calls through the same server on its
// standard streams.
func BenchmarkToolCall(b *testing.B) {
	noop := sessionbench.NoopTools
	s := benchSession(b, noop)
	e := newEcho(b, frameSize(&wire.ToolCallFrame{ID: "c0123456789abcdef", Block: "b1", Name: "noop", Args: map[string]any{}}))
	var floor []time.Duration
	for range max(b.N, 100) {
		floor = append(floor, e.roundTrip(b))
	}
	b.ResetTimer()
	med, _ := sessionbench.ToolCalls(b, s, b.N)
	b.StopTimer()
	for range max(b.N, 100) {
		floor = append(floor, e.roundTrip(b))
	}
	st := openStdio(b, nil, noop)
	defer st.Close()
	fl := sessionbench.Micros(sessionbench.Median(floor))
	stdioMed, _ := sessionbench.ToolCalls(b, st, b.N)
	b.ReportMetric(med, "median-µs")
	b.ReportMetric(fl, "echo-µs")
	b.ReportMetric(stdioMed, "stdio-µs")
	b.ReportMetric(med/fl, "ratio")
}

// BenchmarkSessionStart opens sessions three ways in one loop: with a
// server already listening (as a platform's warm pool hands one out:
// connect, token, tools package, worker start, ready), with a server
// started for it (process start included), and with the stdio server
// started for it, as a container backend does.
func BenchmarkSessionStart(b *testing.B) {
	files := map[string][]byte{"tools/__init__.py": []byte("def noop():\n    pass\n")}
	var warm, cold, stdio []time.Duration
	for b.Loop() {
		b.StopTimer()
		srv, err := launch(b.TempDir(), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		s := openRemote(b, srv.URL(), files)
		warm = append(warm, time.Since(t0))
		s.Close()
		srv.stop()

		t0 = time.Now()
		srv, err = launch(b.TempDir(), nil)
		if err != nil {
			b.Fatal(err)
		}
		s = openRemote(b, srv.URL(), files)
		cold = append(cold, time.Since(t0))
		s.Close()
		srv.stop()

		t0 = time.Now()
		s = openStdio(b, files)
		stdio = append(stdio, time.Since(t0))
		s.Close()
	}
	b.ReportMetric(sessionbench.Millis(sessionbench.Median(warm)), "listening-ms")
	b.ReportMetric(sessionbench.Millis(sessionbench.Median(cold)), "spawned-ms")
	b.ReportMetric(sessionbench.Millis(sessionbench.Median(stdio)), "stdio-ms")
}

func openRemote(b *testing.B, url string, files map[string][]byte) transport.Session {
	be, err := remote.New(remote.Config{URL: url, Secret: testSecret})
	if err != nil {
		b.Fatal(err)
	}
	s, err := be.Open(context.Background(), transport.SessionConfig{Files: files})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// openStdio starts the server on its standard streams, writing the files
// to a directory first as a container backend must.
func openStdio(b *testing.B, files map[string][]byte, tools ...transport.ToolHandler) transport.Session {
	dir := b.TempDir()
	for name, data := range files {
		p := dir + "/files/" + name
		if err := os.MkdirAll(p[:strings.LastIndexByte(p, '/')], 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o444); err != nil {
			b.Fatal(err)
		}
	}
	cmd := exec.Command(serverBin, "--python", "/usr/bin/python3", "--workdir", dir, "--files", dir+"/files")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	cfg := transport.SessionConfig{}
	if len(tools) > 0 {
		cfg.Tools = tools[0]
	}
	s, err := wire.NewClient(context.Background(), wire.NewConn(out, in, in, 0), cfg, wire.ClientOptions{
		OnClose: func() error { return cmd.Wait() },
	})
	if err != nil {
		b.Fatal(err)
	}
	return s
}
