package agentsandbox_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"
)

// The agent-sandbox CRDs the objects here must conform to: those of the
// module version go.mod requires, read from its source in the module
// cache, at the API version the provisioner speaks.
const (
	crdVersion = "v1beta1"
	claimCRD   = "extensions.agents.x-k8s.io_sandboxclaims.yaml"
	sandboxCRD = "agents.x-k8s.io_sandboxes.yaml"
)

var (
	crdDirOnce sync.Once
	crdDir     string
	crdDirErr  error
)

// crdSchema returns the openAPIV3Schema of crdVersion in the CRD file.
func crdSchema(t *testing.T, file string) map[string]any {
	t.Helper()
	crdDirOnce.Do(func() {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/agent-sandbox").Output()
		if err != nil {
			crdDirErr = fmt.Errorf("go list -m sigs.k8s.io/agent-sandbox: %w", err)
			return
		}
		crdDir = filepath.Join(strings.TrimSpace(string(out)), "k8s", "crds")
	})
	if crdDirErr != nil {
		t.Fatal(crdDirErr)
	}
	data, err := os.ReadFile(filepath.Join(crdDir, file))
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string `json:"name"`
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == crdVersion {
			return v.Schema.OpenAPIV3Schema
		}
	}
	t.Fatalf("%s has no version %s", file, crdVersion)
	return nil
}

// conform checks obj (as JSON would decode it) against a CRD's schema as
// strictly as the API server's strict field validation: every field known
// to the schema, of its type, enum values in their enum, required fields
// present. A schema object with no properties, or that preserves unknown
// fields, takes any (metadata, embedded pod specs).
func conform(t *testing.T, what string, obj any, schema map[string]any) {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var problems []string
	check(&problems, "", v, schema)
	if len(problems) > 0 {
		sort.Strings(problems)
		t.Errorf("%s does not conform to its CRD (%s):\n%s", what, crdVersion, strings.Join(problems, "\n"))
	}
}

func check(problems *[]string, at string, v any, s map[string]any) {
	if s["x-kubernetes-preserve-unknown-fields"] == true || v == nil {
		return
	}
	if s["x-kubernetes-int-or-string"] == true {
		switch v.(type) {
		case string, float64:
		default:
			*problems = append(*problems, fmt.Sprintf("%s: %T, want an integer or a string", at, v))
		}
		return
	}
	if enum, ok := s["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			found = found || e == v
		}
		if !found {
			*problems = append(*problems, fmt.Sprintf("%s: %v is not one of %v", at, v, enum))
		}
	}
	switch s["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			*problems = append(*problems, fmt.Sprintf("%s: %T, want an object", at, v))
			return
		}
		props, hasProps := s["properties"].(map[string]any)
		addl, _ := s["additionalProperties"].(map[string]any)
		for k, sub := range m {
			switch {
			case hasProps && props[k] != nil:
				check(problems, at+"."+k, sub, props[k].(map[string]any))
			case addl != nil:
				check(problems, at+"."+k, sub, addl)
			case hasProps:
				*problems = append(*problems, fmt.Sprintf("%s.%s: unknown field", at, k))
			}
		}
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if _, ok := m[r.(string)]; !ok {
					*problems = append(*problems, fmt.Sprintf("%s.%s: required, missing", at, r))
				}
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			*problems = append(*problems, fmt.Sprintf("%s: %T, want an array", at, v))
			return
		}
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range a {
				check(problems, fmt.Sprintf("%s[%d]", at, i), e, items)
			}
		}
	case "string":
		if _, ok := v.(string); !ok {
			*problems = append(*problems, fmt.Sprintf("%s: %T, want a string", at, v))
		}
	case "integer":
		if f, ok := v.(float64); !ok || f != float64(int64(f)) {
			*problems = append(*problems, fmt.Sprintf("%s: %v, want an integer", at, v))
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			*problems = append(*problems, fmt.Sprintf("%s: %T, want a boolean", at, v))
		}
	}
}

// TestRecordedObjectsConform: the recorded answers the tests replay are
// what the v1beta1 CRDs allow, and the checker refuses what they do not.
func TestRecordedObjectsConform(t *testing.T) {
	claims := crdSchema(t, claimCRD)
	for _, f := range []string{"claim-ready.yaml", "claim-pending.yaml", "claim-warmpool-not-found.yaml", "claim-ready-unknown.yaml"} {
		conform(t, f, recordedMap(t, f), claims)
	}
	conform(t, "sandbox-ready.yaml", recordedMap(t, "sandbox-ready.yaml"), crdSchema(t, sandboxCRD))

	// The v1alpha1 shape the provisioner spoke before: templateRef is
	// not a field of a v1beta1 claim, and warmPoolRef is required.
	old := map[string]any{"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
		"metadata": map[string]any{"name": "x"}, "spec": map[string]any{"templateRef": map[string]any{"name": "codemode-sandbox"}}}
	var problems []string
	check(&problems, "", roundTrip(t, old), claims)
	if !strings.Contains(strings.Join(problems, "\n"), ".spec.templateRef: unknown field") ||
		!strings.Contains(strings.Join(problems, "\n"), ".spec.warmPoolRef: required, missing") {
		t.Errorf("a v1alpha1 claim passed the v1beta1 schema: %v", problems)
	}
}

func recordedMap(t *testing.T, file string) map[string]any {
	t.Helper()
	data, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return m
}

func roundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
