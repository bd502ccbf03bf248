package wire

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestDecodeSimpleMatchesJSON holds the fast path of plain values against
// encoding/json: whatever it takes, it decodes to the same value, and
// what it leaves to encoding/json includes every value that encoding/json
// changes or refuses.
func TestDecodeSimpleMatchesJSON(t *testing.T) {
	type fields struct {
		S   string
		I   int
		I8  int8
		I64 int64
		B   bool
		M   map[string]any
		MS  map[string]map[string]string
	}
	values := []string{
		`""`, `"abc"`, `"b17"`, `"héllo ☃"`, `"a\"b"`, `"a\\b"`, `"\u00e9"`, "\"\xff\xfe\"", "\"\xed\xa0\x80\"",
		`0`, `-0`, `7`, `-12`, `127`, `128`, `-129`, `123456789012345678`, `1234567890123456789`,
		`9223372036854775807`, `-9223372036854775808`, `1.0`, `1e3`, `-1.5`, `12E-1`,
		`true`, `false`, `{}`, `{"a":1}`, `[]`, `"1"`, `null`,
	}
	v := reflect.ValueOf(&fields{}).Elem()
	for i := range v.NumField() {
		for _, val := range values {
			fast := reflect.New(v.Field(i).Type()).Elem()
			if !decodeSimple([]byte(val), fast) {
				continue
			}
			slow := reflect.New(v.Field(i).Type())
			if err := json.Unmarshal([]byte(val), slow.Interface()); err != nil {
				t.Errorf("%s %s: the fast path took it, encoding/json refuses it: %v", v.Type().Field(i).Name, val, err)
				continue
			}
			if !reflect.DeepEqual(fast.Interface(), slow.Elem().Interface()) {
				t.Errorf("%s %s: fast path %#v, encoding/json %#v", v.Type().Field(i).Name, val, fast.Interface(), slow.Elem().Interface())
			}
		}
	}
}

var (
	benchCallLine = []byte(`{"kind":"tool_call","id":"3f2a9c1b7e4d-12345","block":"b17","name":"noop","args":{}}`)
	benchDoneLine = []byte(`{"kind":"done","id":"b17","exit_code":0,"background":false}`)
)

// BenchmarkDecodeToolCall decodes a worker's tool call, as the host does
// for every call.
func BenchmarkDecodeToolCall(b *testing.B) {
	for b.Loop() {
		if _, err := Decode(benchCallLine); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeDone decodes a worker's done frame, as the host does at
// the end of every block.
func BenchmarkDecodeDone(b *testing.B) {
	for b.Loop() {
		if _, err := Decode(benchDoneLine); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDecodeSimpleTakesPlainValues: the fast path takes the plain values it
// is for, so that TestDecodeSimpleMatchesJSON cannot pass by taking none.
func TestDecodeSimpleTakesPlainValues(t *testing.T) {
	var (
		s string
		i int64
		b bool
		m map[string]any
	)
	for _, tc := range []struct {
		data string
		dst  any
	}{{`"abc"`, &s}, {`7`, &i}, {`-12`, &i}, {`true`, &b}, {`{}`, &m}} {
		if !decodeSimple([]byte(tc.data), reflect.ValueOf(tc.dst).Elem()) {
			t.Errorf("%s: left to encoding/json", tc.data)
		}
	}
	if s != "abc" || i != -12 || !b || m == nil {
		t.Errorf("decoded %q %d %v %v", s, i, b, m)
	}
}
