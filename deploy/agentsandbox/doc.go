// Package agentsandbox provisions remote sandboxes from
// kubernetes-sigs/agent-sandbox (v1.0, its v1beta1 API): for each session
// it creates a SandboxClaim from a SandboxWarmPool (which names the
// SandboxTemplate), waits until the claim's Ready condition is True, and
// hands the sandbox's service address to the remote backend; releasing it
// deletes the claim, and with it the sandbox. A claim whose Ready
// condition is False for a reason that waiting cannot fix (the warm pool
// or its template not found, the claim or sandbox expired) fails at once.
//
//	p, err := agentsandbox.New(agentsandbox.Config{Client: dyn, Namespace: "agents", WarmPool: "codemode-sandbox-pool"})
//	b, err := remote.New(remote.Config{Provision: p.Provision, Secret: secret})
//
// It lives in the deploy module, apart from the library, so that programs
// without Kubernetes do not download client-go. It talks to the API
// server through client-go's dynamic client and polls the claim; each
// claim carries a shutdown time (Config.MaxLifetime) after which the
// controller deletes it even if the host never released it.
//
// It is tested against client-go's fake dynamic client with objects
// decoded strictly into agent-sandbox's own types and checked against its
// v1beta1 CRDs (those of the module version go.mod requires), not against
// a live cluster.
package agentsandbox
