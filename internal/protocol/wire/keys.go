package wire

import (
	"fmt"
	"reflect"
	"strings"
)

// A frame's keys are declared once, by its struct's json tags: the tag
// names the key, and a key tagged omitempty is optional; every other key
// is required. Encoding uses the same tags through encoding/json, and
// decoding reads this table, built from them.

// key is one JSON key of a frame or nested object and the struct field it
// fills.
type key struct {
	key      string
	required bool
	index    int
	nested   nesting
}

// nesting says how a field's value is decoded: a plain JSON value, or a
// nested object or list of objects held to the same strict rules as a
// frame.
type nesting int

const (
	plain        nesting = iota
	nestedObject         // a pointer to a struct
	nestedList           // a slice of structs
)

// keyTables holds the key table of every frame and nested type, built once
// at start; it is read-only afterwards.
var keyTables = map[reflect.Type][]key{}

func init() {
	for _, mk := range newFrame {
		addKeys(reflect.TypeOf(mk()).Elem())
	}
}

// addKeys builds the key table of the struct type t and of the structs
// nested in it.
func addKeys(t reflect.Type) {
	if _, ok := keyTables[t]; ok {
		return
	}
	keys := []key{}
	keyTables[t] = keys
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if !f.IsExported() || name == "" || name == "-" {
			panic(fmt.Sprintf("wire: field %s.%s has no JSON key", t.Name(), f.Name))
		}
		k := key{key: name, required: !strings.Contains(","+opts+",", ",omitempty,"), index: i}
		switch {
		case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct:
			k.nested = nestedObject
			addKeys(f.Type.Elem())
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			k.nested = nestedList
			addKeys(f.Type.Elem())
		}
		keys = append(keys, k)
	}
	keyTables[t] = keys
}

// keysOf is the key table of a frame or nested struct type.
func keysOf(t reflect.Type) []key { return keyTables[t] }
