//go:build linux

package server

import (
	"context"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/transport"
)

func BenchmarkServePrint(b *testing.B) {
	host, sb, err := SocketPair()
	if err != nil {
		b.Fatal(err)
	}
	ws := b.TempDir()
	go func() {
		_ = Serve(context.Background(), wire.NewConn(sb, sb, sb, 0), Config{Python: "/usr/bin/python3", Workdir: ws, Env: os.Environ()})
		sb.Close()
	}()
	s, err := wire.NewClient(context.Background(), wire.NewConn(host, host, host, 0), transport.SessionConfig{}, wire.ClientOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := s.Exec(context.Background(), transport.Block{Code: "print(1)"}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "median-ns")
}
