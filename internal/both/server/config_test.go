//go:build linux

package server

import (
	"reflect"
	"testing"

	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/internal/sandbox/supervisor"
)

// TestFileInfoMatchesSupervisor: the supervisor decodes its own copy of
// FileInfo from what this package encodes, and bounds its lines as frames
// are bounded. A conversion makes the compiler hold the fields together;
// this holds their JSON names and the bound.
func TestFileInfoMatchesSupervisor(t *testing.T) {
	for _, pair := range [][2]reflect.Type{
		{reflect.TypeFor[wire.FileInfo](), reflect.TypeFor[supervisor.FileInfo]()},
	} {
		a, b := pair[0], pair[1]
		if a.NumField() != b.NumField() {
			t.Fatalf("%v has %d fields, %v %d", a, a.NumField(), b, b.NumField())
		}
		for i := range a.NumField() {
			fa, fb := a.Field(i), b.Field(i)
			if fa.Name != fb.Name || fa.Type != fb.Type || fa.Tag != fb.Tag {
				t.Errorf("field %d: %v has %s %v `%s`, %v has %s %v `%s`", i, a, fa.Name, fa.Type, fa.Tag, b, fb.Name, fb.Type, fb.Tag)
			}
		}
	}
	if supervisor.MaxLine != wire.MaxFrameSize {
		t.Errorf("supervisor.MaxLine = %d, want wire.MaxFrameSize (%d)", supervisor.MaxLine, wire.MaxFrameSize)
	}
}
