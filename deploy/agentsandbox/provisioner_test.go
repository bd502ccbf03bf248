package agentsandbox_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/adk-codemode/codemode/deploy/agentsandbox"
)

const ns = "agents"

// recorded decodes a recorded API object strictly into its real type.
func recorded[T any](t *testing.T, file string) *T {
	t.Helper()
	data, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	v := new(T)
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v
}

func toObj(t *testing.T, v any) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(v)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// newClient is a fake API server holding sandboxes.
func newClient(t *testing.T, sandboxes ...*unstructured.Unstructured) *dynamicfake.FakeDynamicClient {
	t.Helper()
	c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		agentsandbox.ClaimResource:   "SandboxClaimList",
		agentsandbox.SandboxResource: "SandboxList",
	})
	for _, sb := range sandboxes {
		if err := c.Tracker().Create(agentsandbox.SandboxResource, sb, ns); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// controller answers every claim created with status, as the agent-sandbox
// controller would, once the claim exists.
func controller(t *testing.T, c *dynamicfake.FakeDynamicClient, status *extv1beta1.SandboxClaimStatus) {
	c.PrependReactor("create", "sandboxclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
		if status != nil {
			var claim extv1beta1.SandboxClaim
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &claim); err != nil {
				t.Error(err)
			}
			claim.Status = *status
			obj = toObj(t, &claim)
		}
		err := c.Tracker().Create(agentsandbox.ClaimResource, obj, ns)
		return true, obj, err
	})
}

func newProvisioner(t *testing.T, c *dynamicfake.FakeDynamicClient, timeout time.Duration) *agentsandbox.Provisioner {
	t.Helper()
	p, err := agentsandbox.New(agentsandbox.Config{Client: c, Namespace: ns, WarmPool: "codemode-sandbox-pool", ReadyTimeout: timeout, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// createdClaim returns the claim the provisioner sent, decoded.
func createdClaim(t *testing.T, c *dynamicfake.FakeDynamicClient) *extv1beta1.SandboxClaim {
	t.Helper()
	for _, a := range c.Actions() {
		if a.GetVerb() == "create" && a.GetResource() == agentsandbox.ClaimResource {
			var claim extv1beta1.SandboxClaim
			obj := a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured)
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, &claim, true); err != nil {
				t.Fatalf("the claim sent does not decode strictly: %v", err)
			}
			conform(t, "the claim sent", obj.Object, crdSchema(t, claimCRD))
			return &claim
		}
	}
	t.Fatal("no claim was created")
	return nil
}

func deleted(c *dynamicfake.FakeDynamicClient) []string {
	var names []string
	for _, a := range c.Actions() {
		if a.GetVerb() == "delete" && a.GetResource() == agentsandbox.ClaimResource {
			names = append(names, a.(k8stesting.DeleteAction).GetName())
		}
	}
	return names
}

func TestProvisionReadySandbox(t *testing.T) {
	ready := recorded[extv1beta1.SandboxClaim](t, "claim-ready.yaml")
	sb := recorded[sandboxv1beta1.Sandbox](t, "sandbox-ready.yaml")
	c := newClient(t, toObj(t, sb))
	controller(t, c, &ready.Status)
	p := newProvisioner(t, c, time.Minute)

	start := time.Now()
	url, release, err := p.Provision(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := "ws://codemode-sandbox-pool-x7k2q.agents.svc.cluster.local:8080"; url != want {
		t.Errorf("url = %q, want %q", url, want)
	}
	claim := createdClaim(t, c)
	if claim.Spec.WarmPoolRef.Name != "codemode-sandbox-pool" || !strings.HasPrefix(claim.Name, "codemode-") || claim.Namespace != ns {
		t.Errorf("claim sent: %+v", claim)
	}
	if lc := claim.Spec.Lifecycle; lc == nil || lc.ShutdownPolicy != extv1beta1.ShutdownPolicyDelete ||
		lc.ShutdownTime.Time.Before(start.Add(59*time.Minute)) || lc.ShutdownTime.After(time.Now().Add(time.Hour)) {
		t.Errorf("the claim must be deleted by the controller an hour on: %+v", claim.Spec.Lifecycle)
	}
	if len(deleted(c)) != 0 {
		t.Fatal("the claim was deleted before release")
	}
	release()
	if got := deleted(c); len(got) != 1 || got[0] != claim.Name {
		t.Errorf("release deleted %v, want [%s]", got, claim.Name)
	}
	if _, err := c.Resource(agentsandbox.ClaimResource).Namespace(ns).Get(context.Background(), claim.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the claim is still there: %v", err)
	}
}

func TestProvisionFails(t *testing.T) {
	tests := []struct {
		name   string
		status *extv1beta1.SandboxClaimStatus
		want   string
	}{
		{"warm pool not found", &recorded[extv1beta1.SandboxClaim](t, "claim-warmpool-not-found.yaml").Status, `WarmPoolNotFound: SandboxWarmPool "codemode-sandbox-pool" not found`},
		// A Ready condition that is there but not True is not ready.
		{"ready unknown", &recorded[extv1beta1.SandboxClaim](t, "claim-ready-unknown.yaml").Status, "not ready within 200ms (last: ReconcilerError: the controller could not read the pod)"},
		{"never ready", &recorded[extv1beta1.SandboxClaim](t, "claim-pending.yaml").Status, "not ready within 200ms (last: DependenciesNotReady: Pod exists with phase Pending)"},
		{"ready without a sandbox", &extv1beta1.SandboxClaimStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "DependenciesReady"}}}, "read sandbox"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t)
			controller(t, c, tc.status)
			_, release, err := newProvisioner(t, c, 200*time.Millisecond).Provision(t.Context())
			if err == nil || !strings.Contains(err.Error(), tc.want) || release != nil {
				t.Fatalf("Provision = %v, want an error containing %q and no release", err, tc.want)
			}
			if got := deleted(c); len(got) != 1 || got[0] != createdClaim(t, c).Name {
				t.Errorf("the failed claim was not deleted: %v", got)
			}
		})
	}
}

func TestProvisionCreateRefused(t *testing.T) {
	c := newClient(t)
	c.PrependReactor("create", "sandboxclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(agentsandbox.ClaimResource.GroupResource(), "", nil)
	})
	_, _, err := newProvisioner(t, c, time.Second).Provision(t.Context())
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "create claim") {
		t.Fatalf("Provision = %v, want the API's refusal", err)
	}
	if len(deleted(c)) != 0 {
		t.Error("deleted a claim that was never created")
	}
}

func TestProvisionConcurrentClaimsDistinct(t *testing.T) {
	ready := recorded[extv1beta1.SandboxClaim](t, "claim-ready.yaml")
	c := newClient(t, toObj(t, recorded[sandboxv1beta1.Sandbox](t, "sandbox-ready.yaml")))
	controller(t, c, &ready.Status)
	p := newProvisioner(t, c, time.Minute)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, release, err := p.Provision(t.Context()); err != nil {
				t.Error(err)
			} else {
				release()
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, name := range deleted(c) {
		if seen[name] {
			t.Errorf("claim %s used twice", name)
		}
		seen[name] = true
	}
	if len(seen) != 8 {
		t.Errorf("%d distinct claims, want 8", len(seen))
	}
}

func TestNewChecksConfig(t *testing.T) {
	for _, cfg := range []agentsandbox.Config{
		{},
		{Client: newClient(t), WarmPool: "x"},
		{Client: newClient(t), Namespace: ns},
		{Client: newClient(t), Namespace: ns, WarmPool: "x", Scheme: "http"},
	} {
		if _, err := agentsandbox.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// TestProvisionSandboxNotReady: a ready claim whose sandbox's own Ready
// condition is not True is refused, condition status checked, not
// presence.
func TestProvisionSandboxNotReady(t *testing.T) {
	ready := recorded[extv1beta1.SandboxClaim](t, "claim-ready.yaml")
	sb := recorded[sandboxv1beta1.Sandbox](t, "sandbox-ready.yaml")
	sb.Status.Conditions[0].Status = metav1.ConditionFalse
	sb.Status.Conditions[0].Reason = sandboxv1beta1.SandboxReasonSuspended
	c := newClient(t, toObj(t, sb))
	controller(t, c, &ready.Status)
	_, release, err := newProvisioner(t, c, time.Minute).Provision(t.Context())
	if err == nil || !strings.Contains(err.Error(), "is not ready (Ready is False: SandboxSuspended") || release != nil {
		t.Fatalf("Provision = %v, want the sandbox's Ready condition named", err)
	}
}
