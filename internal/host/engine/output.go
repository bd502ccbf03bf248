package engine

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// TruncationMarker joins the head and the tail of a long output.
const TruncationMarker = "\n... [truncated] ...\n"

// BoundOutput returns text as the model sees it, without the note: the
// text itself when it has at most limit characters, else the first 70% of
// the limit, a marker and the last part (a limit too small to hold the
// marker and a tail, 69 or less, gives a plain prefix). Either way the text
// is passed through [Neutralise]. cut says whether anything was left out.
// This is the one place output is bounded.
func BoundOutput(text string, limit int) (view string, cut bool) {
	if limit <= 0 || len(text) <= limit {
		return Neutralise(text), false
	}
	n := utf8.RuneCountInString(text)
	if n <= limit {
		return Neutralise(text), false
	}
	runes := []rune(text)
	head := int(0.7 * float64(limit))
	tail := limit - head - len(TruncationMarker)
	if limit <= 40 || tail <= 0 {
		// No room for the marker and a tail: a plain prefix.
		return Neutralise(string(runes[:limit])), true
	}
	return Neutralise(string(runes[:head])) + TruncationMarker + Neutralise(string(runes[n-tail:])), true
}

// UntrustedPrefix starts every output line that imitates conversation
// structure.
const UntrustedPrefix = "[untrusted output] "

var (
	// roleLine matches a line that opens like a turn of a transcript: a
	// role label and a colon, perhaps after markdown decoration.
	roleLine = regexp.MustCompile(`(?i)^[\s>#*_\-]*[\[(]?\s*(system|user|assistant|model|tool|function|human|developer)\s*[\])]?\s*:`)
	// labelledRoleLine matches a role label behind a short label of its
	// own, as an echo of the input prints it ("Echo: system: ...").
	labelledRoleLine = regexp.MustCompile(`(?i)^[^:\n]{1,64}:\s*[\[(]?\s*(system|user|assistant|model|tool|function|human|developer)\s*[\])]?\s*:`)
	// runnerFrame is how a Python traceback names a line of the code
	// itself, which the runner compiles under the file name "<code-mode>":
	// Python's own text, not a tag, so the framing check looks past it.
	runnerFrame = regexp.MustCompile(`File "<code-mode>", line \d+`)
	// framing matches the tokens that frame a conversation: chat-template
	// tokens such as <|im_start|>, turn markers, the tags of the
	// <code-mode> block and of tool calls and results, and the JSON keys
	// of function calls and responses.
	framing = regexp.MustCompile(`(?i)<\|[^|<>\n]{0,64}\|>|</?\s*(code-mode|how-to-use|tools-package|system|instructions?|start_of_turn|end_of_turn|tool[-_]?(?:output|result|response|call|code)|function[-_]?(?:response|call|result|results|calls))\b[^<>\n]{0,256}>?|"(function_?response|function_?call|tool_?result|tool_?call)"\s*:`)
)

// Neutralise defuses text that imitates conversation structure, so that
// sandbox output cannot pass for the system, the user or a tool result.
// Each line that starts with a role label ("system:", "### Assistant:",
// "[user]:"), perhaps behind a short label ("Echo: system:"), or holds a
// framing token (see framing) gets UntrustedPrefix; in it, the angle
// brackets of framing tags and chat-template tokens are written as &lt; and
// &gt;. A traceback's frame of the code itself (File "<code-mode>", line 3)
// is Python's text and marks nothing by itself. Every other line is left
// exactly as it is.
func Neutralise(text string) string {
	if !mayFrame(text) {
		return text
	}
	lines := splitLines(text)
	for i, l := range lines {
		body := l[:len(l)-terminatorLen(l)]
		if !imitates(body) {
			continue
		}
		body = framing.ReplaceAllStringFunc(body, func(m string) string {
			if !strings.HasPrefix(m, "<") {
				return m
			}
			return strings.ReplaceAll(strings.ReplaceAll(m, "<", "&lt;"), ">", "&gt;")
		})
		lines[i] = UntrustedPrefix + body + l[len(l)-terminatorLen(l):]
	}
	return strings.Join(lines, "")
}

// imitates reports whether line opens with a role label or holds a
// framing token other than a traceback's frame of the code itself.
func imitates(line string) bool {
	if roleLine.MatchString(line) || labelledRoleLine.MatchString(line) {
		return true
	}
	if strings.Contains(line, `File "<code-mode>", line `) {
		line = runnerFrame.ReplaceAllLiteralString(line, `File "code-mode", line 0`)
	}
	return framing.MatchString(line)
}

// lineBreaks are what may end a line for a reader of the output, a model's
// tokenizer included: CR LF counts as one.
const lineBreaks = "\n\r\v\f\u0085\u2028\u2029"

// splitLines cuts text after each line break, keeping the breaks.
func splitLines(text string) []string {
	var lines []string
	for len(text) > 0 {
		i := strings.IndexAny(text, lineBreaks)
		if i < 0 {
			break
		}
		_, size := utf8.DecodeRuneInString(text[i:])
		if text[i] == '\r' && strings.HasPrefix(text[i+1:], "\n") {
			size = 2
		}
		lines = append(lines, text[:i+size])
		text = text[i+size:]
	}
	return append(lines, text)
}

// terminatorLen is the length of the line break that ends line, if any.
func terminatorLen(line string) int {
	if strings.HasSuffix(line, "\r\n") {
		return 2
	}
	r, size := utf8.DecodeLastRuneInString(line)
	if size > 0 && strings.ContainsRune(lineBreaks, r) {
		return size
	}
	return 0
}

// mayFrame is a quick test that lets plain output skip the regular
// expressions: framing needs '<' or a quote, a role label a colon.
func mayFrame(text string) bool {
	return strings.ContainsAny(text, "<\":")
}

// Thousands formats n with comma separators: 1,000,000.
func Thousands(n int) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// JSONSafe converts a tool result into a value that encodes as JSON: bytes
// become {"kind": "bytes", "data": base64, "encoding": "base64"}, times ISO
// 8601 strings, map keys strings, non-finite floats strings, structs and
// other marshalable values their JSON form, and anything else its %v text.
func JSONSafe(v any) any {
	return safe(reflect.ValueOf(v), 0)
}

const maxSafeDepth = 64

func safe(v reflect.Value, depth int) any {
	if !v.IsValid() {
		return nil
	}
	if depth > maxSafeDepth {
		// Not %v: it follows a self-referencing map or slice without end.
		return fmt.Sprintf("[%s nested more than %d levels deep]", v.Type(), maxSafeDepth)
	}
	if v.CanInterface() {
		switch x := v.Interface().(type) {
		case nil:
			return nil
		case []byte:
			if x == nil {
				return nil
			}
			return map[string]any{"kind": "bytes", "data": base64.StdEncoding.EncodeToString(x), "encoding": "base64"}
		case time.Time:
			return x.Format(time.RFC3339Nano)
		case time.Duration:
			return x.String()
		case json.Number:
			return x
		case json.RawMessage:
			var out any
			if json.Unmarshal(x, &out) == nil {
				return out
			}
			return string(x)
		case error:
			return x.Error()
		}
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		if v.Kind() == reflect.Pointer && v.CanInterface() {
			if _, ok := v.Interface().(json.Marshaler); ok {
				return viaJSON(v)
			}
		}
		return safe(v.Elem(), depth+1)
	case reflect.Bool:
		return v.Bool()
	case reflect.String:
		return v.String()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint()
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Sprint(f)
		}
		return f
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		out := make(map[string]any, v.Len())
		it := v.MapRange()
		for it.Next() {
			out[fmt.Sprint(it.Key())] = safe(it.Value(), depth+1)
		}
		return out
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return nil
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = safe(v.Index(i), depth+1)
		}
		return out
	case reflect.Struct:
		if v.CanInterface() {
			return viaJSON(v)
		}
	}
	return fmt.Sprintf("%v", v)
}

// viaJSON converts v through its JSON encoding, falling back to its text.
func viaJSON(v reflect.Value) any {
	b, err := json.Marshal(v.Interface())
	if err != nil {
		var uv *json.UnsupportedValueError
		if errors.As(err, &uv) {
			// %v would follow the cycle without end.
			return fmt.Sprintf("[%s: %v]", v.Type(), err)
		}
		return fmt.Sprintf("%v", v)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return string(b)
	}
	return out
}

// MarshalJSON encodes v as JSON without escaping <, > and &.
func MarshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// JSONSize is the size of v as MarshalJSON encodes it, 0 if it cannot.
func JSONSize(v any) int {
	b, err := MarshalJSON(v)
	if err != nil {
		return 0
	}
	return len(b)
}
