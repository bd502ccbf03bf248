package wire

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/adk-codemode/codemode/transport"
)

func TestRoundTrip(t *testing.T) {
	frames := []Frame{
		&ReadyFrame{ProtocolVersion: ProtocolVersion, PythonVersion: "3.11.2", Packages: map[string]map[string]string{"yaml": {"PyYAML": "6.0"}}},
		&RunFrame{ID: "b1", Code: "print('<é>')\n", TimeoutMS: 5000, GraceMS: 100, MaxOutputBytes: 10},
		&ToolCallFrame{ID: "c1", Name: "ns.tool", Args: map[string]any{"a": 1.5, "b": []any{"x", nil}}, TimeoutMS: 7},
		&ToolResultFrame{ID: "c1", OK: true, Value: map[string]any{"v": "ok"}},
		&ToolResultFrame{ID: "c2", Error: &ErrorInfo{Type: "HTTPStatusError", Message: "nope", StatusCode: 404, Body: "b"}},
		&CancelFrame{ID: "c3", Reason: "stopped"},
		&LogFrame{Level: "warning", Msg: "m"},
		&DoneFrame{ID: "b1", ExitCode: 3, Stopped: true, Background: true},
		&DoneFrame{ID: "b2", ExitCode: 0},
		&OutputFrame{ID: "b1", Stdout: "o\n", Stderr: "", StdoutDropped: 9, Files: []FileInfo{{Path: "a/b.txt", Size: 3}}},
		&GetFileFrame{ID: "f1", Path: "a/b.txt"},
		&FileFrame{ID: "f1", Path: "a/b.txt", Data: []byte{0, 1, 255}},
		&FileFrame{ID: "f2", Path: "x", Error: "missing"},
		&InterruptFrame{Message: "stop"},
		&ShutdownFrame{},
		&ErrorFrame{Message: "broken"},
	}
	for _, f := range frames {
		line, err := Encode(f)
		if err != nil {
			t.Fatalf("Encode(%s): %v", f.Kind(), err)
		}
		if bytes.Count(line, []byte("\n")) != 1 || !bytes.HasSuffix(line, []byte("\n")) {
			t.Errorf("%s: not one line: %q", f.Kind(), line)
		}
		if !bytes.HasPrefix(line, []byte(`{"kind":"`+f.Kind()+`"`)) {
			t.Errorf("%s: kind is not the first key: %s", f.Kind(), line)
		}
		got, err := Decode(line)
		if err != nil {
			t.Fatalf("Decode(%s): %v", line, err)
		}
		if diff := cmp.Diff(f, got); diff != "" {
			t.Errorf("%s round trip (-want +got):\n%s", f.Kind(), diff)
		}
	}
}

func TestEncodeIsCompact(t *testing.T) {
	line, _ := Encode(&ShutdownFrame{})
	if string(line) != "{\"kind\":\"shutdown\"}\n" {
		t.Errorf("got %q", line)
	}
	line, _ = Encode(&RunFrame{ID: "b1", Code: "<&>"})
	if string(line) != "{\"kind\":\"run\",\"id\":\"b1\",\"code\":\"<&>\"}\n" {
		t.Errorf("got %q", line)
	}
}

func TestDecodeRejects(t *testing.T) {
	cases := []struct{ line, why string }{
		{"", "empty frame"},
		{"   \r\n", "empty frame"},
		{"[1]", "not a JSON object"},
		{"{", "invalid JSON"},
		{`{"kind":"run","id":"b","code":"x"} {}`, "data after"},
		{`{"id":"b"}`, `no "kind"`},
		{`{"kind":5}`, `"kind" is not a string`},
		{`{"kind":"launch"}`, "unknown frame kind"},
		{`{"kind":"run","id":"b"}`, `missing key "code"`},
		{`{"kind":"run","id":"b","code":"x","extra":1}`, `unknown key "extra"`},
		{`{"kind":"run","ID":"b","id":"b","code":"x"}`, `unknown key "ID"`},
		{`{"kind":"run","id":"b","Code":"x"}`, `missing key "code"`},
		{`{"kind":"run","id":"b","id":"c","code":"x"}`, "duplicate key"},
		{`{"kind":"run","id":null,"code":"x"}`, `"id" is null`},
		{`{"kind":"run","id":7,"code":"x"}`, `key "id"`},
		{`{"kind":"done","id":"b","exit_code":1.5}`, `key "exit_code"`},
		{`{"kind":"tool_call","id":"c","block":"b1","name":"n","args":[1]}`, `key "args"`},
		{`{"kind":"tool_result","id":"c","ok":false,"error":"str"}`, "error"},
		{`{"kind":"tool_result","id":"c","ok":false,"error":{"type":"T","message":"m","Extra":1}}`, `unknown key "Extra"`},
		{`{"kind":"output","id":"b","stdout":"","stderr":"","files":[{"path":"p"}]}`, `missing key "size"`},
		{`{"kind":"output","id":"b","stdout":"","stderr":"","files":{}}`, "not a list"},
	}
	for _, c := range cases {
		_, err := Decode([]byte(c.line))
		if err == nil {
			t.Errorf("Decode(%q) = nil error, want %q", c.line, c.why)
			continue
		}
		if !errors.Is(err, ErrProtocol) {
			t.Errorf("Decode(%q) = %v, does not wrap ErrProtocol", c.line, err)
		}
		if !strings.Contains(err.Error(), c.why) {
			t.Errorf("Decode(%q) = %q, want it to say %q", c.line, err, c.why)
		}
	}
}

func TestVersionMismatch(t *testing.T) {
	other := ProtocolVersion + 1
	_, err := Decode([]byte(`{"kind":"ready","protocol_version":` + strconv.Itoa(other) + `,"python_version":"3.13.0","new_key":true}`))
	var ve *transport.VersionError
	if !errors.As(err, &ve) || ve.Sandbox != other || ve.Host != ProtocolVersion {
		t.Fatalf("err = %v, want *transport.VersionError{%d, %d}", err, other, ProtocolVersion)
	}
	if !strings.Contains(err.Error(), "rebuild") {
		t.Errorf("message %q does not say what to do", err)
	}
}

func TestConnBoundsLines(t *testing.T) {
	long := `{"kind":"log","msg":"` + strings.Repeat("x", 200) + "\"}\n"
	in := strings.NewReader(`{"kind":"shutdown"}` + "\n" + long + `{"kind":"shutdown"}` + "\n")
	c := NewConn(in, nil, nil, 100)
	if f, err := c.Read(); err != nil || f.Kind() != KindShutdown {
		t.Fatalf("first frame: %v %v", f, err)
	}
	if _, err := c.Read(); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("long line: err = %v, want ErrFrameTooLarge", err)
	}
	if _, err := c.Read(); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("after a too-large frame the connection must stay broken, got %v", err)
	}
}

func TestConnTruncatedFrame(t *testing.T) {
	c := NewConn(strings.NewReader(`{"kind":"shutdown"}`), nil, nil, 0)
	if _, err := c.Read(); !errors.Is(err, ErrProtocol) {
		t.Errorf("err = %v, want a protocol error for a frame without its newline", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"kind":"ready","protocol_version":3,"python_version":"3.11.2","packages":{"a":{"A":"1"}}}`,
		`{"kind":"tool_call","id":"c","block":"b1","name":"n","args":{"a":[1,{"b":null}]},"timeout_ms":5}`,
		`{"kind":"tool_call","id":"c","block":"b1","name":"n","args":{},"thread":3}`,
		`{"kind":"done","id":"b","exit_code":0,"stopped":true}`,
		`{"kind":"output","id":"b","stdout":"x","stderr":"","files":[{"path":"p","size":1}]}`,
		`{"kind":"file","id":"f","path":"p","data":"AAE="}`,
		`{"kind":"tool_result","id":"c","ok":false,"error":{"type":"T","message":"m"}}`,
		`{"kind":"run","id":"b","id":"b"}`,
		`{"kind":"ready","protocol_version":9}`,
		"\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := Decode(data)
		if err != nil {
			if fr != nil {
				t.Fatal("frame and error both set")
			}
			return
		}
		// Whatever decodes must encode, and decode again to the same frame.
		line, err := Encode(fr)
		if err != nil {
			t.Fatalf("decoded frame does not encode: %v", err)
		}
		again, err := Decode(line)
		if err != nil {
			t.Fatalf("re-encoded frame %q does not decode: %v", line, err)
		}
		if diff := cmp.Diff(fr, again); diff != "" {
			a, _ := Encode(again)
			if !bytes.Equal(line, a) {
				t.Fatalf("not stable (-first +second):\n%s", diff)
			}
		}
	})
}
