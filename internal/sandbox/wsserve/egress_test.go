//go:build linux

package wsserve

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/adk-codemode/codemode/internal/both/server"
	"github.com/adk-codemode/codemode/internal/protocol/wsproto"
)

// TestEgressHeader: the response that accepts a session's connection
// reports Config.Egress, canonical, and nothing without it.
func TestEgressHeader(t *testing.T) {
	for _, tc := range []struct {
		egress []string
		want   string
	}{
		{[]string{"B.example:443", "a.example:443", "b.example:443"}, "a.example:443,b.example:443"},
		{nil, ""},
	} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() {
			served <- Serve(t.Context(), ln, Config{
				Session:        server.Config{FilesDir: t.TempDir()},
				InsecureNoAuth: true,
				Egress:         tc.egress,
				ServeSession: func(_ context.Context, stream io.ReadWriteCloser, _ map[string][]byte) error {
					return stream.Close()
				},
			})
		}()
		d := websocket.Dialer{Subprotocols: []string{wsproto.Subprotocol}, HandshakeTimeout: 10 * time.Second}
		ws, resp, err := d.DialContext(t.Context(), "ws://"+ln.Addr().String()+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := resp.Header[wsproto.EgressHeader]; tc.egress == nil && ok {
			t.Errorf("without Config.Egress the response has %s: %q", wsproto.EgressHeader, resp.Header.Get(wsproto.EgressHeader))
		}
		if got := resp.Header.Get(wsproto.EgressHeader); got != tc.want {
			t.Errorf("%s: %q, want %q", wsproto.EgressHeader, got, tc.want)
		}
		if err := wsproto.NewStream(ws, wsproto.Options{}).SendFiles(nil, wsproto.FileLimits{}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			t.Fatal("the session did not end")
		}
		ws.Close()
	}
}

func TestValidateEgress(t *testing.T) {
	serve := func(context.Context, io.ReadWriteCloser, map[string][]byte) error { return nil }
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Egress: []string{"a.example:443"}}, "without ServeSession"},
		{Config{Egress: []string{"a.example:443\r\nX: y"}, ServeSession: serve}, "bad egress allowlist"},
	} {
		tc.cfg.Session.FilesDir, tc.cfg.InsecureNoAuth = t.TempDir(), true
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%q) = %v, want %q", tc.cfg.Egress, err, tc.want)
		}
	}
}
