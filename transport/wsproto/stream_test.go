package wsproto

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// pair returns the two ends of a real WebSocket on loopback: the server's
// as a Stream with opts, the client's raw.
func pair(t *testing.T, opts Options) (*Stream, *websocket.Conn) {
	t.Helper()
	got := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		got <- ws
	}))
	t.Cleanup(srv.Close)
	client, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	s := NewStream(<-got, opts)
	t.Cleanup(func() { s.Close() })
	return s, client
}

func TestStreamReadsMessagesAsOneStream(t *testing.T) {
	s, c := pair(t, Options{})
	for _, m := range []string{"ab", "", "c\n"} {
		if err := c.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 3)
	if _, err := io.ReadFull(s, buf); err != nil || string(buf) != "abc" {
		t.Fatalf("read %q, %v", buf, err)
	}
}

func TestStreamClosesOnOversizeMessage(t *testing.T) {
	s, c := pair(t, Options{MaxMessageBytes: 1000})
	if err := c.WriteMessage(websocket.TextMessage, bytes.Repeat([]byte("x"), 1001)); err != nil {
		t.Fatal(err)
	}
	_, err := io.ReadAll(s)
	var le *LimitError
	if !errors.As(err, &le) || le.What != "message size" {
		t.Fatalf("Read: %v, want a message size LimitError", err)
	}
	_, _, err = c.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) || !strings.Contains(err.Error(), "message size exceeds 1000 bytes") {
		t.Fatalf("client saw %v, want close 1009 naming the limit", err)
	}
}

func TestStreamClosesWhenIdle(t *testing.T) {
	s, c := pair(t, Options{IdleTimeout: 500 * time.Millisecond})
	// The raw client answers pings only while it reads; it does not read,
	// so nothing reaches the stream.
	_, err := io.ReadAll(s)
	var le *LimitError
	if !errors.As(err, &le) || le.What != "idle time" {
		t.Fatalf("Read: %v, want an idle time LimitError", err)
	}
	for {
		_, _, err = c.ReadMessage()
		if err != nil {
			break
		}
	}
	if !websocket.IsCloseError(err, websocket.ClosePolicyViolation) || !strings.Contains(err.Error(), "idle time exceeds") {
		t.Fatalf("client saw %v, want close 1008 naming the idle limit", err)
	}
}

func TestStreamPingsKeepAnIdleLinkAlive(t *testing.T) {
	s, c := pair(t, Options{IdleTimeout: time.Second})
	go func() {
		for { // reading answers the stream's pings
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
		}
	}()
	read := make(chan error, 1)
	go func() { _, err := s.Read(make([]byte, 1)); read <- err }()
	select {
	case err := <-read:
		t.Fatalf("an answered link ended: %v", err)
	case <-time.After(3 * time.Second):
	}
}

func TestStreamSplitsLargeWritesAtLines(t *testing.T) {
	s, c := pair(t, Options{MaxMessageBytes: 10})
	if _, err := s.Write([]byte("aaaa\nbbbb\ncccccc\n")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 2 {
		_, m, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(m))
	}
	if got[0] != "aaaa\nbbbb\n" || got[1] != "cccccc\n" {
		t.Errorf("messages %q", got)
	}
}
