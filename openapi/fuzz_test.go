package openapi

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"
)

// FuzzLoad feeds arbitrary documents to the loader: it must return operations or
// an error, never panic, and every operation's declaration must be JSON.
func FuzzLoad(f *testing.F) {
	for _, p := range []string{"testdata/petstore.yaml", "testdata/hub.yaml", "testdata/split/main.yaml"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(paramsDoc))
	f.Add([]byte(authDoc))
	f.Add([]byte(`{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{"/a/{x}":{"get":{"parameters":[{"name":"x","in":"path","schema":{"$ref":"#/components/schemas/A"}}]}}},"components":{"schemas":{"A":{"items":{"$ref":"#/components/schemas/A"}}}}}`))
	f.Add([]byte("openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths:\n  /x: &a\n    get: {responses: {'200': *a}}\n"))
	f.Add([]byte("swagger: '2.0'"))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		type result struct {
			ts  *API
			err error
		}
		done := make(chan result, 1)
		go func() {
			ts, err := Load(ctx, Config{Spec: data, BaseURL: "http://127.0.0.1:1", SkipInvalid: true})
			done <- result{ts, err}
		}()
		var res result
		select {
		case res = <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("New did not return within 20s for %q", data)
		}
		ts, err := res.ts, res.err
		if err != nil {
			var de *DocumentError
			if errors.As(err, &de) && de.Problem == "" {
				t.Fatalf("a DocumentError without a problem: %#v", de)
			}
			return
		}
		list := ts.Ops()
		for _, tl := range list {
			if _, err := json.Marshal(tl.Declaration()); err != nil {
				t.Fatalf("tool %s: the declaration is not JSON: %v", tl.Name(), err)
			}
		}
	})
}
