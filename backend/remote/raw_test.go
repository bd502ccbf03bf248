package remote_test

import (
	"archive/tar"
	"bytes"
	"net/http"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/adk-codemode/codemode/internal/protocol/wsproto"
)

// dialRaw opens a WebSocket to a server by hand, to send what the backend
// never would.
func dialRaw(t *testing.T, addr, auth string) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{wsproto.Subprotocol}}
	ws, resp, err := d.Dial("ws://"+addr+"/", http.Header{"Authorization": {auth}})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

func symlinkTar(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "tools/__init__.py", Linkname: "/etc/passwd"}); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	return buf.Bytes()
}
