package codemode

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"
)

// truncationMarker joins the head and the tail of a long output.
const truncationMarker = "\n... [truncated] ...\n"

// boundOutput returns text as the model sees it: unchanged when it has at
// most limit characters, else the first 70% of the limit, a marker, the
// last part, and a note giving the full length. A limit of 40 or less gives
// a plain prefix. This is the one place output is bounded.
func boundOutput(text string, limit int) string {
	if limit <= 0 || len(text) <= limit {
		return text
	}
	n := utf8.RuneCountInString(text)
	if n <= limit {
		return text
	}
	runes := []rune(text)
	var view string
	if limit <= 40 {
		view = string(runes[:limit])
	} else {
		head := int(0.7 * float64(limit))
		tail := limit - head - len(truncationMarker)
		view = string(runes[:head]) + truncationMarker + string(runes[n-tail:])
	}
	return view + fmt.Sprintf("\n[Output too long: %s characters, more than the limit of %s; only the start and the end are shown.]",
		thousands(n), thousands(limit))
}

// thousands formats n with comma separators: 1,000,000.
func thousands(n int) string {
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

// jsonSafe converts a tool result into a value that encodes as JSON: bytes
// become {"kind": "bytes", "data": base64, "encoding": "base64"}, times ISO
// 8601 strings, map keys strings, non-finite floats strings, structs and
// other marshalable values their JSON form, and anything else its %v text.
func jsonSafe(v any) any {
	return safe(reflect.ValueOf(v), 0)
}

const maxSafeDepth = 64

func safe(v reflect.Value, depth int) any {
	if !v.IsValid() {
		return nil
	}
	if depth > maxSafeDepth {
		return fmt.Sprintf("%v", v)
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
		return fmt.Sprintf("%v", v)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return string(b)
	}
	return out
}
