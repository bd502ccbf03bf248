// Package agentsandbox provisions remote sandboxes from
// kubernetes-sigs/agent-sandbox: for each session it creates a
// SandboxClaim for a SandboxTemplate (served from a SandboxWarmPool when
// one is ready), waits until the claim's sandbox is ready, and hands the
// sandbox's service address to the remote backend; releasing it deletes
// the claim, and with it the sandbox.
//
//	p, err := agentsandbox.New(agentsandbox.Config{Client: dyn, Namespace: "agents", Template: "codemode-sandbox"})
//	b, err := remote.New(remote.Config{Provision: p.Provision, Secret: secret})
//
// It lives in the deploy module, apart from the library, so that programs
// without Kubernetes do not download client-go. It talks to the API
// server through client-go's dynamic client and polls the claim; each
// claim carries a shutdown time (Config.MaxLifetime) after which the
// controller deletes it even if the host never released it.
//
// It is tested against client-go's fake dynamic client with objects
// decoded into agent-sandbox's own types, not against a live cluster.
package agentsandbox
