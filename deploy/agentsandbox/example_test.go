package agentsandbox_test

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/adk-codemode/codemode/deploy/agentsandbox"
)

// Claim a sandbox and release it. A real program passes a dynamic client
// for its cluster (dynamic.NewForConfig) and hands p.Provision to
// remote.Config.Provision; here a fake API server plays the controller,
// marking each claim ready with a sandbox of the same name.
func ExampleProvisioner_Provision() {
	c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		agentsandbox.ClaimResource: "SandboxClaimList", agentsandbox.SandboxResource: "SandboxList",
	})
	c.PrependReactor("create", "sandboxclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		claim := a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
		_ = unstructured.SetNestedSlice(claim.Object, []any{map[string]any{"type": "Ready", "status": "True", "reason": "DependenciesReady"}}, "status", "conditions")
		sandbox := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox",
			"metadata": map[string]any{"name": claim.GetName(), "namespace": "agents"},
			"status": map[string]any{"serviceFQDN": "sandbox-1.agents.svc.cluster.local",
				"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "DependenciesReady"}}},
		}}
		_ = c.Tracker().Create(agentsandbox.SandboxResource, sandbox, "agents")
		return true, claim, c.Tracker().Create(agentsandbox.ClaimResource, claim, "agents")
	})

	p, err := agentsandbox.New(agentsandbox.Config{Client: c, Namespace: "agents", WarmPool: "codemode-sandbox-pool"})
	if err != nil {
		panic(err)
	}
	url, release, err := p.Provision(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Println(url)
	release()
	list, _ := c.Resource(agentsandbox.ClaimResource).Namespace("agents").List(context.Background(), metav1.ListOptions{})
	fmt.Println("claims left:", len(list.Items))
	// Output:
	// ws://sandbox-1.agents.svc.cluster.local:8080
	// claims left: 0
}
