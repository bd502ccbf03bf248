package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// toJSON turns v into plain JSON values: directly when it already holds
// decoded JSON, else by decoding its JSON text, marshalling it first when it
// is not text already. Numbers become json.Number.
func toJSON(v any) (any, error) {
	if out, ok := plainJSON(v, 0); ok {
		return out, nil
	}
	var data []byte
	switch t := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		data = t
	case []byte:
		data = t
	default:
		var err error
		data, err = json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotJSON, err)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotJSON, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the schema", ErrNotJSON)
	}
	return out, nil
}

// plainJSON converts a value that already consists of decoded JSON
// (map[string]any, []any, strings, booleans, numbers, nil), turning numbers
// into json.Number as encoding/json would print them. Objects and arrays
// that hold nothing to convert are kept as they are, not copied; the
// Document only reads them. It reports false for anything else, which then
// takes the slower marshal round trip.
func plainJSON(v any, depth int) (any, bool) {
	out, _, ok := convertJSON(v, depth)
	return out, ok
}

// smallNumbers holds the json.Number of each small integer, boxed once:
// schemas are full of small bounds and defaults.
var smallNumbers = func() (out [1024]any) {
	for i := range out {
		out[i] = json.Number(strconv.Itoa(i))
	}
	return out
}()

// convertJSON is plainJSON that also reports whether the result differs
// from v, so that an unchanged object or array is shared.
func convertJSON(v any, depth int) (out any, changed, ok bool) {
	if depth > 10000 {
		return nil, false, false
	}
	switch t := v.(type) {
	case nil, string, bool, json.Number:
		return t, false, true
	case float64:
		if math.IsInf(t, 0) || math.IsNaN(t) {
			return nil, false, false
		}
		if t >= 0 && t < float64(len(smallNumbers)) && t == math.Trunc(t) && !math.Signbit(t) {
			return smallNumbers[int(t)], true, true // as encoding/json prints it
		}
		b, err := json.Marshal(t)
		if err != nil {
			return nil, false, false
		}
		return json.Number(b), true, true
	case int:
		if t >= 0 && t < len(smallNumbers) {
			return smallNumbers[t], true, true
		}
		return json.Number(strconv.Itoa(t)), true, true
	case int64:
		return json.Number(strconv.FormatInt(t, 10)), true, true
	case map[string]any:
		// The converted members, kept until the end: the object is copied
		// only when one of them differs.
		type member struct {
			key string
			val any
		}
		var buf [16]member
		members := buf[:0]
		changed := false
		for k, e := range t {
			c, ch, ok := convertJSON(e, depth+1)
			if !ok {
				return nil, false, false
			}
			changed = changed || ch
			members = append(members, member{k, c})
		}
		if !changed {
			return t, false, true
		}
		copied := make(map[string]any, len(t))
		for _, m := range members {
			copied[m.key] = m.val
		}
		return copied, true, true
	case []any:
		var copied []any
		for i, e := range t {
			c, ch, ok := convertJSON(e, depth+1)
			if !ok {
				return nil, false, false
			}
			if ch && copied == nil {
				copied = make([]any, len(t))
				copy(copied, t)
			}
			if copied != nil {
				copied[i] = c
			}
		}
		if copied == nil {
			return t, false, true
		}
		return copied, true, true
	}
	return nil, false, false
}
