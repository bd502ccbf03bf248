package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/adk-codemode/codemode/transport"

	"github.com/adk-codemode/codemode/internal/both/clip"
)

// ProtocolVersion is the version of the frame protocol this package speaks.
// The sandbox sends its own version in the ready frame; the host refuses any
// other with a [*transport.VersionError].
const ProtocolVersion = 3

// Frame kinds.
const (
	KindReady      = "ready"       // sandbox → host, once, first
	KindRun        = "run"         // host → sandbox: run one block
	KindToolCall   = "tool_call"   // sandbox → host: call a host tool
	KindToolResult = "tool_result" // host → sandbox: answer to tool_call
	KindCancel     = "cancel"      // sandbox → host: a tool call is abandoned
	KindLog        = "log"         // sandbox → host: diagnostic line
	KindDone       = "done"        // sandbox → host: the block finished
	KindOutput     = "output"      // sandbox → host: the block's output, after done
	KindGetFile    = "get_file"    // host → sandbox: fetch a workspace file
	KindFile       = "file"        // sandbox → host: answer to get_file
	KindInterrupt  = "interrupt"   // host → sandbox: stop the running block
	KindShutdown   = "shutdown"    // host → sandbox: end the session
	KindError      = "error"       // sandbox → host: the sandbox cannot go on
)

// A Frame is one protocol message. The concrete types are the *XxxFrame
// types of this package.
type Frame interface {
	Kind() string
	frame()
}

// ReadyFrame is the sandbox's greeting.
type ReadyFrame struct {
	ProtocolVersion int                          `json:"protocol_version"`
	PythonVersion   string                       `json:"python_version,omitempty"`
	Packages        map[string]map[string]string `json:"packages,omitempty"`
}

// RunFrame asks the sandbox to run one block of Python. Its ID is the
// block's: every frame that belongs to the block names it.
type RunFrame struct {
	ID             string `json:"id"`
	Code           string `json:"code"`
	TimeoutMS      int64  `json:"timeout_ms,omitempty"`       // 0: no limit
	GraceMS        int64  `json:"grace_ms,omitempty"`         // wait after an interrupt before a hard stop
	MaxOutputBytes int64  `json:"max_output_bytes,omitempty"` // per stream; 0: the server's default
}

// ToolCallFrame is a call from sandbox code to a host tool, made by code
// of the block named by Block.
type ToolCallFrame struct {
	ID        string         `json:"id"`
	Block     string         `json:"block"`
	Name      string         `json:"name"`
	Args      map[string]any `json:"args"`
	TimeoutMS int64          `json:"timeout_ms,omitempty"`
	// Thread numbers the calling thread within its block: 0 the main
	// thread, then 1, 2... in the order of each thread's first call.
	Thread int `json:"thread,omitempty"`
}

// ToolResultFrame answers a [ToolCallFrame] with the same ID.
type ToolResultFrame struct {
	ID    string     `json:"id"`
	OK    bool       `json:"ok"`
	Value any        `json:"value,omitempty"`
	Error *ErrorInfo `json:"error,omitempty"`
}

// ErrorInfo describes a failed tool call to the sandbox, which raises it as a
// Python exception.
type ErrorInfo struct {
	Type       string `json:"type"`
	Message    string `json:"message"`
	Trace      string `json:"trace,omitempty"`
	StatusCode int    `json:"status_code,omitempty"`
	Body       any    `json:"body,omitempty"`
}

// CancelFrame tells the host that the sandbox no longer waits for a tool
// call, for example because the block was interrupted.
type CancelFrame struct {
	ID     string `json:"id"`
	Block  string `json:"block"` // the block that made the call
	Reason string `json:"reason,omitempty"`
}

// LogFrame is a diagnostic message from the sandbox server.
type LogFrame struct {
	Level string `json:"level,omitempty"`
	Msg   string `json:"msg"`
}

// DoneFrame ends the block whose id is ID. Its output follows in an
// [OutputFrame] with the same ID.
type DoneFrame struct {
	ID       string `json:"id"`
	ExitCode int    `json:"exit_code"`
	// Stopped: the block was interrupted at its timeout and stopped in
	// place; the session's state is intact.
	Stopped bool `json:"stopped,omitempty"`
	// Reset: the block did not stop within the grace period, so the worker
	// and every process it started were killed and a fresh worker started;
	// variables are gone.
	Reset bool `json:"reset,omitempty"`
	// OOM: the worker was killed by the sandbox's memory limit (with
	// Reset).
	OOM bool `json:"oom,omitempty"`
	// Background: threads or child processes the block started are still
	// running.
	Background bool `json:"background,omitempty"`
}

// OutputFrame carries a block's captured output.
type OutputFrame struct {
	ID            string     `json:"id"`
	Stdout        string     `json:"stdout"`
	Stderr        string     `json:"stderr"`
	StdoutDropped int64      `json:"stdout_dropped,omitempty"` // bytes cut from the middle
	StderrDropped int64      `json:"stderr_dropped,omitempty"`
	Files         []FileInfo `json:"files,omitempty"` // created or changed in the workspace
}

// FileInfo names a regular file in the sandbox workspace.
type FileInfo struct {
	Path string `json:"path"` // slash-separated, relative to the workspace
	Size int64  `json:"size"`
}

// GetFileFrame asks for the content of a workspace file.
type GetFileFrame struct {
	ID   string `json:"id"`
	Path string `json:"path"`
}

// FileFrame answers a [GetFileFrame].
type FileFrame struct {
	ID    string `json:"id"`
	Path  string `json:"path"`
	Data  []byte `json:"data,omitempty"` // base64 in JSON
	Error string `json:"error,omitempty"`
}

// InterruptFrame asks the sandbox to stop Block, if it is the running
// block; one for a block that has ended is ignored. Message is what the
// code's CodeTimeout says.
type InterruptFrame struct {
	Block   string `json:"block"`
	Message string `json:"message,omitempty"`
}

// ShutdownFrame ends the session.
type ShutdownFrame struct{}

// ErrorFrame reports a failure that ends the session.
type ErrorFrame struct {
	Message string `json:"message"`
}

func (*ReadyFrame) Kind() string      { return KindReady }
func (*RunFrame) Kind() string        { return KindRun }
func (*ToolCallFrame) Kind() string   { return KindToolCall }
func (*ToolResultFrame) Kind() string { return KindToolResult }
func (*CancelFrame) Kind() string     { return KindCancel }
func (*LogFrame) Kind() string        { return KindLog }
func (*DoneFrame) Kind() string       { return KindDone }
func (*OutputFrame) Kind() string     { return KindOutput }
func (*GetFileFrame) Kind() string    { return KindGetFile }
func (*FileFrame) Kind() string       { return KindFile }
func (*InterruptFrame) Kind() string  { return KindInterrupt }
func (*ShutdownFrame) Kind() string   { return KindShutdown }
func (*ErrorFrame) Kind() string      { return KindError }

func (*ReadyFrame) frame()      {}
func (*RunFrame) frame()        {}
func (*ToolCallFrame) frame()   {}
func (*ToolResultFrame) frame() {}
func (*CancelFrame) frame()     {}
func (*LogFrame) frame()        {}
func (*DoneFrame) frame()       {}
func (*OutputFrame) frame()     {}
func (*GetFileFrame) frame()    {}
func (*FileFrame) frame()       {}
func (*InterruptFrame) frame()  {}
func (*ShutdownFrame) frame()   {}
func (*ErrorFrame) frame()      {}

var newFrame = map[string]func() Frame{
	KindReady:      func() Frame { return new(ReadyFrame) },
	KindRun:        func() Frame { return new(RunFrame) },
	KindToolCall:   func() Frame { return new(ToolCallFrame) },
	KindToolResult: func() Frame { return new(ToolResultFrame) },
	KindCancel:     func() Frame { return new(CancelFrame) },
	KindLog:        func() Frame { return new(LogFrame) },
	KindDone:       func() Frame { return new(DoneFrame) },
	KindOutput:     func() Frame { return new(OutputFrame) },
	KindGetFile:    func() Frame { return new(GetFileFrame) },
	KindFile:       func() Frame { return new(FileFrame) },
	KindInterrupt:  func() Frame { return new(InterruptFrame) },
	KindShutdown:   func() Frame { return new(ShutdownFrame) },
	KindError:      func() Frame { return new(ErrorFrame) },
}

// ErrProtocol is wrapped by every decoding error.
var ErrProtocol = errors.New("wire: protocol error")

// FilesPreambleMagic opens the files preamble that may precede the frames
// on a byte stream (internal/protocol/wsproto's WriteFilesPreamble): a frame that
// starts with it is that preamble, sent to an end that does not read it.
const FilesPreambleMagic = "CMFILES1"

func protocolErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrProtocol, fmt.Sprintf(format, args...))
}

// Encode returns the frame as one line of JSON, including the final newline.
func Encode(f Frame) ([]byte, error) {
	var buf bytes.Buffer
	if err := appendFrame(&buf, f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func appendFrame(buf *bytes.Buffer, f Frame) error {
	start := buf.Len()
	buf.WriteString(`{"kind":`)
	kind, _ := json.Marshal(f.Kind())
	buf.Write(kind)
	body := buf.Len()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f); err != nil {
		buf.Truncate(start)
		return fmt.Errorf("wire: encode %s frame: %w", f.Kind(), err)
	}
	// enc wrote "{...}\n" after the kind; splice it into one object.
	obj := buf.Bytes()[body:]
	if bytes.Equal(obj, []byte("{}\n")) {
		buf.Truncate(body)
		buf.WriteString("}\n")
		return nil
	}
	obj[0] = ','
	return nil
}

// Decode parses one frame from a line (a trailing "\n" or "\r\n" is allowed).
// It fails, wrapping [ErrProtocol], on anything but a JSON object whose kind
// is known and whose keys are exactly the kind's keys, each at most once,
// with every required key present.
func Decode(line []byte) (Frame, error) {
	line = bytes.TrimRight(line, "\r\n")
	if len(bytes.TrimSpace(line)) == 0 {
		return nil, protocolErrorf("empty frame")
	}
	if bytes.HasPrefix(line, []byte(FilesPreambleMagic)) {
		return nil, protocolErrorf("the stream opens with the files preamble (%s), which this end was not told to read: "+
			"a server that takes the session's files on its stream reads them first (codemode-sandbox --files-over-stdin), "+
			"and a host sends them only to such a server (sandboxserver.ConnectOptions.SendFiles)", FilesPreambleMagic)
	}
	raw, err := splitObject(line)
	if err != nil {
		return nil, err
	}
	kindRaw, ok := raw["kind"]
	if !ok {
		return nil, protocolErrorf(`frame has no "kind"`)
	}
	kind, ok := simpleString(kindRaw)
	if !ok {
		if err := json.Unmarshal(kindRaw, &kind); err != nil {
			return nil, protocolErrorf(`"kind" is not a string`)
		}
	}
	mk, ok := newFrame[kind]
	if !ok {
		return nil, protocolErrorf("unknown frame kind %q", clip.String(kind, 64))
	}
	f := mk()
	delete(raw, "kind")
	if kind == KindReady {
		// Check the version before the key set: a sandbox of another
		// version may well have other keys, and the version is what the
		// user needs to hear about.
		var v int
		if pv, ok := raw["protocol_version"]; ok && json.Unmarshal(pv, &v) == nil && v != ProtocolVersion {
			return nil, &transport.VersionError{Sandbox: v, Host: ProtocolVersion}
		}
	}
	if err := fillFields(kind+" frame", raw, reflect.ValueOf(f).Elem()); err != nil {
		return nil, err
	}
	return f, nil
}

// splitObject reads the top-level keys of a JSON object, rejecting
// duplicates and trailing data. It scans the object itself, which is much
// cheaper than json.Decoder's token stream; each value is checked when it
// is decoded into its field.
func splitObject(data []byte) (map[string]json.RawMessage, error) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		if i < len(data) && (data[i] == '[' || data[i] == '"' || data[i] == 't' || data[i] == 'f' || data[i] == 'n' || data[i] == '-' || (data[i] >= '0' && data[i] <= '9')) {
			return nil, protocolErrorf("frame is not a JSON object")
		}
		return nil, protocolErrorf("invalid JSON")
	}
	raw := make(map[string]json.RawMessage, 8)
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return raw, finish(data, i+1)
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return nil, protocolErrorf("invalid JSON: expected a key")
		}
		end, err := scanString(data, i)
		if err != nil {
			return nil, err
		}
		var key string
		if bytes.IndexByte(data[i:end], '\\') < 0 {
			key = string(data[i+1 : end-1])
		} else if err := json.Unmarshal(data[i:end], &key); err != nil {
			return nil, protocolErrorf("invalid JSON: bad key")
		}
		if _, dup := raw[key]; dup {
			return nil, protocolErrorf("duplicate key %q", clip.String(key, 64))
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return nil, protocolErrorf("invalid JSON: expected ':'")
		}
		i = skipSpace(data, i+1)
		vend, err := scanValue(data, i, 0)
		if err != nil {
			return nil, err
		}
		raw[key] = data[i:vend:vend]
		i = skipSpace(data, vend)
		if i >= len(data) {
			return nil, protocolErrorf("invalid JSON: unterminated object")
		}
		if data[i] == '}' {
			return raw, finish(data, i+1)
		}
		if data[i] != ',' {
			return nil, protocolErrorf("invalid JSON: expected ',' or '}'")
		}
		i = skipSpace(data, i+1)
	}
}

func finish(data []byte, i int) error {
	if skipSpace(data, i) != len(data) {
		return protocolErrorf("data after the frame object")
	}
	return nil
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the index just past the JSON string starting at i.
func scanString(data []byte, i int) (int, error) {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		default:
			if data[j] < 0x20 {
				return 0, protocolErrorf("invalid JSON: control character in string")
			}
		}
	}
	return 0, protocolErrorf("invalid JSON: unterminated string")
}

// maxNesting bounds how deeply a frame's values may nest.
const maxNesting = 1000

// scanValue returns the index just past the JSON value starting at i. It
// checks the structure; the decoding into a field checks the rest.
func scanValue(data []byte, i, depth int) (int, error) {
	if depth > maxNesting {
		return 0, protocolErrorf("invalid JSON: nested too deeply")
	}
	if i >= len(data) {
		return 0, protocolErrorf("invalid JSON: missing value")
	}
	switch c := data[i]; {
	case c == '"':
		return scanString(data, i)
	case c == '{' || c == '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		j := skipSpace(data, i+1)
		if j < len(data) && data[j] == closer {
			return j + 1, nil
		}
		for {
			var err error
			if c == '{' {
				if j >= len(data) || data[j] != '"' {
					return 0, protocolErrorf("invalid JSON: expected a key")
				}
				if j, err = scanString(data, j); err != nil {
					return 0, err
				}
				j = skipSpace(data, j)
				if j >= len(data) || data[j] != ':' {
					return 0, protocolErrorf("invalid JSON: expected ':'")
				}
				j = skipSpace(data, j+1)
			}
			if j, err = scanValue(data, j, depth+1); err != nil {
				return 0, err
			}
			j = skipSpace(data, j)
			if j >= len(data) {
				return 0, protocolErrorf("invalid JSON: unterminated value")
			}
			if data[j] == closer {
				return j + 1, nil
			}
			if data[j] != ',' {
				return 0, protocolErrorf("invalid JSON: expected ',' or '%c'", closer)
			}
			j = skipSpace(data, j+1)
		}
	default:
		j := i
		for j < len(data) && !strings.ContainsRune(" \t\r\n,]}:", rune(data[j])) {
			j++
		}
		if j == i {
			return 0, protocolErrorf("invalid JSON: unexpected %q", data[i])
		}
		if !json.Valid(data[i:j]) {
			return 0, protocolErrorf("invalid JSON: bad literal %q", clip.String(string(data[i:j]), 32))
		}
		return j, nil
	}
}

// fillFields decodes raw's keys into the struct v by the struct's key
// table, and fails on a missing required key or a key it does not define.
func fillFields(what string, raw map[string]json.RawMessage, v reflect.Value) error {
	for _, fd := range keysOf(v.Type()) {
		data, ok := raw[fd.key]
		if !ok {
			if fd.required {
				return protocolErrorf("%s: missing key %q", what, fd.key)
			}
			continue
		}
		delete(raw, fd.key)
		isNull := bytes.Equal(bytes.TrimSpace(data), []byte("null"))
		if isNull && fd.required {
			return protocolErrorf("%s: key %q is null", what, fd.key)
		}
		dst := v.Field(fd.index)
		if isNull {
			dst.SetZero()
			continue
		}
		var err error
		switch fd.nested {
		case nestedObject:
			obj := reflect.New(dst.Type().Elem())
			err = decodeObject(fd.key, data, obj.Elem())
			dst.Set(obj)
		case nestedList:
			err = decodeList(fd.key, data, dst)
		default:
			if decodeSimple(data, dst) {
				break
			}
			if err = json.Unmarshal(data, dst.Addr().Interface()); err != nil {
				err = protocolErrorf("%s: key %q: %s", what, fd.key, clip.String(err.Error(), 256)) // may quote the value
			}
		}
		if err != nil {
			return err
		}
	}
	if len(raw) > 0 {
		keys := make([]string, 0, len(raw))
		for k := range raw {
			keys = append(keys, clip.String(k, 64))
		}
		return protocolErrorf("%s: unknown key %q", what, minString(keys))
	}
	return nil
}

// decodeSimple decodes the commonest plain values the way encoding/json
// does, without its reflection: a string with no escapes, an integer
// literal, a boolean, and an empty object into a map. It reports false
// for anything else (and for a value that does not fit dst), which
// encoding/json then decodes, or refuses with its own error. data is one
// JSON value that scanValue has checked, without surrounding space.
func decodeSimple(data []byte, dst reflect.Value) bool {
	switch dst.Kind() {
	case reflect.String:
		s, ok := simpleString(data)
		if ok {
			dst.SetString(s)
		}
		return ok
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := simpleInt(data)
		if !ok || dst.OverflowInt(n) {
			return false
		}
		dst.SetInt(n)
		return true
	case reflect.Bool:
		switch string(data) {
		case "true":
			dst.SetBool(true)
		case "false":
			dst.SetBool(false)
		default:
			return false
		}
		return true
	case reflect.Map:
		// encoding/json makes a new, empty map for {}.
		if string(data) != "{}" || dst.Type().Key().Kind() != reflect.String {
			return false
		}
		dst.Set(reflect.MakeMap(dst.Type()))
		return true
	}
	return false
}

// simpleString is the value of the JSON string data if it has no escapes
// and is valid UTF-8 (encoding/json would replace invalid bytes), which is
// then its bytes between the quotes; scanString has refused control
// characters already.
func simpleString(data []byte) (string, bool) {
	if len(data) < 2 || data[0] != '"' || data[len(data)-1] != '"' {
		return "", false
	}
	s := data[1 : len(data)-1]
	if bytes.IndexByte(s, '\\') >= 0 || bytes.IndexByte(s, '"') >= 0 || !utf8.Valid(s) {
		return "", false
	}
	return string(s), true
}

// simpleInt is the value of the JSON integer literal data ("-" and at most
// 18 digits, so that it cannot overflow), or false for any other number.
func simpleInt(data []byte) (int64, bool) {
	digits := data
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && len(digits) > 1) {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if len(digits) < len(data) {
		n = -n
	}
	return n, true
}

// decodeObject decodes a nested object strictly into the struct v.
func decodeObject(what string, data []byte, v reflect.Value) error {
	raw, err := splitObject(data)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fillFields(what, raw, v)
}

// decodeList decodes a list of nested objects strictly into the slice v.
func decodeList(what string, data []byte, v reflect.Value) error {
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return protocolErrorf("%s: not a list of objects", what)
	}
	out := reflect.MakeSlice(v.Type(), len(items), len(items))
	for i, it := range items {
		if err := decodeObject(fmt.Sprintf("%s[%d]", what, i), it, out.Index(i)); err != nil {
			return err
		}
	}
	v.Set(out)
	return nil
}

func minString(ss []string) string {
	m := ss[0]
	for _, s := range ss[1:] {
		if s < m {
			m = s
		}
	}
	return m
}

// errorInfo is the wire form of a tool error.
func errorInfo(e *transport.ToolError) *ErrorInfo {
	if e == nil {
		return nil
	}
	return &ErrorInfo{Type: e.Type, Message: e.Message, Trace: e.Trace, StatusCode: e.StatusCode, Body: e.Body}
}

// files is the contract's form of a file list.
func files(in []FileInfo) []transport.File {
	if in == nil {
		return nil
	}
	out := make([]transport.File, len(in))
	for i, f := range in {
		out[i] = transport.File{Path: f.Path, Size: f.Size}
	}
	return out
}
