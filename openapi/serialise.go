package openapi

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Parameter serialisation follows the style and explode rules of the
// OpenAPI specification (section "Style Values"). Object keys are written
// in sorted order, since a decoded JSON object has none.

// unreserved reports whether b needs no percent-encoding anywhere.
func unreserved(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '-' || b == '.' || b == '_' || b == '~'
}

// reserved are the RFC 3986 reserved characters, kept as they are in
// query values with allowReserved.
const reserved = ":/?#[]@!$&'()*+,;="

// escape percent-encodes every byte that is not unreserved (and, with
// keepReserved, not reserved either).
func escape(s string, keepReserved bool) string {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) || keepReserved && strings.IndexByte(reserved, c) >= 0 {
			sb.WriteByte(c)
			continue
		}
		fmt.Fprintf(&sb, "%%%02X", c)
	}
	return sb.String()
}

// text renders a primitive value as the text of a parameter; arrays and
// objects nested inside one become JSON.
func text(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	case bool:
		return strconv.FormatBool(t)
	case json.Number:
		return t.String()
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return strconv.FormatInt(int64(t), 10)
		}
		return strconv.FormatFloat(t, 'g', -1, 64)
	case float32:
		return text(float64(t))
	case int:
		return strconv.Itoa(t)
	case int64:
		return strconv.FormatInt(t, 10)
	}
	return compactJSON(v)
}

// shape tells a parameter value's kind and parts.
func shape(v any) (items []any, obj map[string]any, keys []string) {
	switch t := v.(type) {
	case []any:
		return t, nil, nil
	case []string:
		out := make([]any, len(t))
		for i, s := range t {
			out[i] = s
		}
		return out, nil, nil
	case map[string]any:
		keys = make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return nil, t, keys
	}
	return nil, nil, nil
}

// pathValue serialises a path parameter (simple, label or matrix).
func pathValue(p param, v any) string {
	if p.asJSON {
		v = compactJSON(v)
	}
	esc := func(x any) string { return escape(text(x), false) }
	items, obj, keys := shape(v)
	var prefix, sep, kv string
	switch p.style {
	case "label":
		prefix, sep = ".", ","
		if p.explode {
			sep = "."
		}
	case "matrix":
		prefix, sep = ";"+escape(p.name, false)+"=", ","
		if p.explode {
			sep = ";" + escape(p.name, false) + "="
		}
	default:
		sep = ","
	}
	kv = ","
	if p.explode {
		kv = "="
	}
	switch {
	case items != nil:
		parts := make([]string, len(items))
		for i, x := range items {
			parts[i] = esc(x)
		}
		return prefix + strings.Join(parts, sep)
	case obj != nil:
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = escape(k, false) + kv + esc(obj[k])
		}
		if p.style == "matrix" && p.explode {
			return ";" + strings.Join(parts, ";")
		}
		return prefix + strings.Join(parts, sep)
	}
	return prefix + esc(v)
}

// queryPairs serialises a query parameter into name=value pairs, already
// escaped.
func queryPairs(p param, v any) []string {
	if p.asJSON {
		v = compactJSON(v)
	}
	esc := func(s string) string { return escape(s, p.allowReserved) }
	name := escape(p.name, false)
	items, obj, keys := shape(v)
	switch {
	case items != nil:
		parts := make([]string, len(items))
		for i, x := range items {
			parts[i] = esc(text(x))
		}
		switch {
		case p.style == "form" && p.explode:
			out := make([]string, len(parts))
			for i, s := range parts {
				out[i] = name + "=" + s
			}
			return out
		case p.style == "spaceDelimited":
			return []string{name + "=" + strings.Join(parts, "%20")}
		case p.style == "pipeDelimited":
			return []string{name + "=" + strings.Join(parts, "|")}
		}
		return []string{name + "=" + strings.Join(parts, ",")}
	case obj != nil:
		switch {
		case p.style == "deepObject":
			out := make([]string, len(keys))
			for i, k := range keys {
				out[i] = name + "%5B" + escape(k, false) + "%5D=" + esc(text(obj[k]))
			}
			return out
		case p.explode:
			out := make([]string, len(keys))
			for i, k := range keys {
				out[i] = escape(k, false) + "=" + esc(text(obj[k]))
			}
			return out
		}
		parts := make([]string, 0, 2*len(keys))
		for _, k := range keys {
			parts = append(parts, esc(k), esc(text(obj[k])))
		}
		return []string{name + "=" + strings.Join(parts, ",")}
	}
	return []string{name + "=" + esc(text(v))}
}

// headerValue serialises a header parameter (simple).
func headerValue(p param, v any) string {
	if p.asJSON {
		return compactJSON(v)
	}
	items, obj, keys := shape(v)
	switch {
	case items != nil:
		parts := make([]string, len(items))
		for i, x := range items {
			parts[i] = text(x)
		}
		return strings.Join(parts, ",")
	case obj != nil:
		kv := ","
		if p.explode {
			kv = "="
		}
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + kv + text(obj[k])
		}
		return strings.Join(parts, ",")
	}
	return text(v)
}

// cookiePairs serialises a cookie parameter (form) into name=value pairs.
func cookiePairs(p param, v any) []string {
	if p.asJSON {
		v = compactJSON(v)
	}
	esc := func(s string) string { return escape(s, false) }
	items, obj, keys := shape(v)
	switch {
	case items != nil && p.explode:
		out := make([]string, len(items))
		for i, x := range items {
			out[i] = p.name + "=" + esc(text(x))
		}
		return out
	case items != nil:
		parts := make([]string, len(items))
		for i, x := range items {
			parts[i] = esc(text(x))
		}
		return []string{p.name + "=" + strings.Join(parts, ",")}
	case obj != nil && p.explode:
		out := make([]string, len(keys))
		for i, k := range keys {
			out[i] = esc(k) + "=" + esc(text(obj[k]))
		}
		return out
	case obj != nil:
		parts := make([]string, 0, 2*len(keys))
		for _, k := range keys {
			parts = append(parts, esc(k), esc(text(obj[k])))
		}
		return []string{p.name + "=" + strings.Join(parts, ",")}
	}
	return []string{p.name + "=" + esc(text(v))}
}
