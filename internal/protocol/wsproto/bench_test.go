package wsproto

import (
	"bufio"
	"bytes"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// BenchmarkResumableRoundTrip sends a line from a client's Resumable to a
// server's, which sends it back, and in the same loop the same line over
// a raw gorilla/websocket echo on 127.0.0.1: the ratio is what the
// numbered, acknowledged stream adds to a round trip.
func BenchmarkResumableRoundTrip(b *testing.B) {
	k := newLink(b, Options{})
	c, s := k.open()
	go func() {
		r := bufio.NewReader(s)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			if _, err := s.Write(line); err != nil {
				return
			}
		}
	}()
	cr := bufio.NewReader(c)
	msg := append(bytes.Repeat([]byte("x"), 120), '\n')
	e := newRawEcho(b)
	var lat, floor []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := cr.ReadBytes('\n'); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		t0 = time.Now()
		if err := e.WriteMessage(websocket.BinaryMessage, msg); err != nil {
			b.Fatal(err)
		}
		if _, _, err := e.ReadMessage(); err != nil {
			b.Fatal(err)
		}
		floor = append(floor, time.Since(t0))
	}
	med := func(ds []time.Duration) time.Duration { s := slices.Clone(ds); slices.Sort(s); return s[len(s)/2] }
	b.ReportMetric(float64(med(lat).Nanoseconds())/1000, "median-µs")
	b.ReportMetric(float64(med(floor).Nanoseconds())/1000, "echo-µs")
	b.ReportMetric(float64(med(lat))/float64(med(floor)), "ratio")
}

func newRawEcho(b *testing.B) *websocket.Conn {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
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
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	return ws
}
