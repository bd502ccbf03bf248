// Package deploy holds the deployment manifests of the sandbox server
// (cmd/codemode-sandbox --listen): cloudrun/ for Cloud Run, kubernetes/
// for kubernetes-sigs/agent-sandbox and for plain pods. It has no code;
// its test decodes every manifest strictly into the real API types and
// checks that they agree with the server and its image. Package
// deploy/agentsandbox claims sandboxes from agent-sandbox for the remote
// backend. This is a module of its own, so that the library's users do
// not download the Kubernetes API or client-go to build it.
package deploy
