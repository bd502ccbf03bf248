// Package transporttest is the shared test suite of the [transport.Backend]
// contract. Every backend runs it from its own tests, as backend/jail does:
//
//	func TestBackend(t *testing.T) {
//		transporttest.Run(t, func(t *testing.T) transport.Backend { return &jail.Backend{} },
//			transporttest.Options{Isolated: true})
//	}
//
// [Options] say what the backend promises beyond the contract: the jail is
// a sandbox, so it passes Isolated; a plain process backend passes the zero
// value.
//
// The suite starts real sessions with a real Python interpreter and checks
// what a caller relies on: state across blocks, output capture (including
// child processes), exit codes and tracebacks, the environment allowlist,
// tool calls (concurrent, failing, cancelled), timeouts that keep state,
// resets after the grace period, output bounds, workspace files, worker
// crashes and Close.
//
// [RunEgress] is the suite of a backend that can give code an egress
// allowlist (package egress): the jail, Docker and a jailing remote
// server run it on a session opened with the policy it passes.
package transporttest
