package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"
)

// memStore is an ArtifactStore in memory, with every version kept.
type memStore map[string][]*genai.Part

func (m memStore) Save(_ context.Context, name string, p *genai.Part) (int64, error) {
	m[name] = append(m[name], p)
	return int64(len(m[name])), nil
}

func (m memStore) Load(_ context.Context, name string, version int) (*genai.Part, error) {
	vs := m[name]
	if version == 0 {
		version = len(vs)
	}
	if version < 1 || version > len(vs) {
		return nil, fmt.Errorf("artifact %q version %d: %w", name, version, fs.ErrNotExist)
	}
	return vs[version-1], nil
}

func (m memStore) List(context.Context) ([]string, error) {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

func artifactTool(t *testing.T, name string) ArtifactTool {
	t.Helper()
	for _, at := range ArtifactTools() {
		if at.Decl.Name == name {
			return at
		}
	}
	t.Fatalf("no artifact tool %s", name)
	return ArtifactTool{}
}

func TestArtifactTools(t *testing.T) {
	ctx := t.Context()
	s := memStore{}
	save, load, list := artifactTool(t, "save_artifact"), artifactTool(t, "load_artifact"), artifactTool(t, "list_artifacts")
	call := func(at ArtifactTool, args map[string]any) any {
		t.Helper()
		v, err := at.Run(ctx, s, args)
		if err != nil {
			t.Fatalf("%s(%v): %v", at.Decl.Name, args, err)
		}
		return v
	}
	if v := call(list, nil); !cmp.Equal(v, []string{}) {
		t.Errorf("list of nothing = %#v, want an empty list", v)
	}
	call(save, map[string]any{"filename": "a.json", "content": `{"x": 1}`, "mime_type": "application/json"})
	call(save, map[string]any{"filename": "a.json", "content": `{"x": 2}`, "mime_type": "application/json"})
	if v := call(save, map[string]any{"filename": "b.bin", "content": "AAEC"}); v != int64(1) {
		t.Errorf("the first version saved = %v, want 1", v)
	}
	for _, tc := range []struct {
		args map[string]any
		want any
	}{
		{map[string]any{"filename": "a.json"}, map[string]any{"kind": "text", "data": `{"x": 2}`, "mime_type": "application/json"}},
		{map[string]any{"filename": "a.json", "version": 1.0}, map[string]any{"kind": "text", "data": `{"x": 1}`, "mime_type": "application/json"}},
		{map[string]any{"filename": "a.json", "version": json.Number("2")}, map[string]any{"kind": "text", "data": `{"x": 2}`, "mime_type": "application/json"}},
		{map[string]any{"filename": "b.bin"}, map[string]any{"kind": "bytes", "data": "AAEC", "mime_type": "application/octet-stream"}},
		{map[string]any{"filename": "a.json", "version": 9.0}, nil}, // no such version: None
		{map[string]any{"filename": "nothing"}, nil},
	} {
		if diff := cmp.Diff(tc.want, call(load, tc.args)); diff != "" {
			t.Errorf("load_artifact(%v) (-want +got):\n%s", tc.args, diff)
		}
	}
	if diff := cmp.Diff([]string{"a.json", "b.bin"}, call(list, nil)); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	for _, args := range []map[string]any{
		{"filename": "a.json", "version": 1.5},
		{"filename": "a.json", "version": -1.0},
		{"filename": "a.json", "version": "1"},
	} {
		if _, err := load.Run(ctx, s, args); err == nil {
			t.Errorf("load_artifact(%v) took a version that is not one", args)
		}
	}
}

func TestSaveArtifactRefuses(t *testing.T) {
	save := artifactTool(t, "save_artifact")
	for _, args := range []map[string]any{
		{"filename": "", "content": "x", "mime_type": "text/plain"},
		{"filename": "a/b", "content": "x", "mime_type": "text/plain"},
		{"filename": `a\b`, "content": "x", "mime_type": "text/plain"},
		{"filename": ReservedPrefix + "x", "content": "x", "mime_type": "text/plain"},
		{"filename": "r", "content": "x", "mime_type": ToolResultsMIMEType + "; charset=utf-8"},
	} {
		s := memStore{}
		_, err := save.Run(t.Context(), s, args)
		if _, ok := errors.AsType[*ArtifactRefusal](err); !ok {
			t.Errorf("save_artifact(%v): %v, want an ArtifactRefusal", args, err)
		}
		if len(s) != 0 {
			t.Errorf("save_artifact(%v) saved %v", args, s)
		}
	}
	if _, err := save.Run(t.Context(), memStore{}, map[string]any{"filename": "b", "content": "not base64!"}); err == nil {
		t.Error("save_artifact took bytes that are not base64")
	}
}

func TestIsTextMIME(t *testing.T) {
	for mt, want := range map[string]bool{
		"text/plain": true, "text/csv; charset=utf-8": true, "application/json": true, "application/xml": true,
		"application/javascript": true, "application/vnd.api+json": true, "image/svg+xml": true,
		"": false, "application/octet-stream": false, "image/png": false,
	} {
		if got := IsTextMIME(mt); got != want {
			t.Errorf("IsTextMIME(%q) = %v, want %v", mt, got, want)
		}
	}
}
