// Command codemode-sandbox serves one sandbox session with one persistent
// Python worker: over its standard input and output (the frame protocol
// of package internal/protocol/wire), or with --listen over a WebSocket (package
// internal/sandbox/wsserve, the server of backend/remote). It is the entry
// point of the sandbox container image (images/sandbox), where the
// container is the isolation boundary:
//
//	docker run -i --rm --network none --read-only --tmpfs /workspace --tmpfs /tmp \
//		--cap-drop ALL --security-opt no-new-privileges codemode-sandbox
//
// On standard input and output it exits when the host sends shutdown or
// closes standard input. With --listen ADDR ($PORT, when set, replaces
// ADDR's port) it answers GET /health at any time, takes one session at
// "/" from a client whose token verifies against $CODEMODE_SANDBOX_TOKEN
// (it refuses to start without one unless given --insecure-no-auth),
// writes the tools package that the session sends to --files, and exits
// when that session ends. Either way it kills every process the session
// started before it exits.
//
// With --files-over-stdin it first reads the tools package from a preamble
// on standard input and writes it to --files (the Docker backend runs it
// so). With --listen --jail each session's worker runs in the namespace
// jail (backend/jail's Backend.ServeSession), where the container lets the
// server make user namespaces, and the server logs once, at start, what a
// jail here enforces. With --jail, --egress HOST:PORT (repeatable) lets
// each session's code reach those hosts through a proxy in the server's
// process, and nothing else; the server logs the policy at start and
// reports the list to the client when the session starts. --egress
// without --jail is refused: the container is then the boundary, and its
// network is the operator's.
//
// On stdin/stdout, --egress-socket PATH relays the code's connections to
// 127.0.0.1:3128, which the worker's proxy variables name, to the host's
// egress proxy at that Unix socket (the Docker backend mounts it with
// docker.Config.Egress); with --listen or --jail it is refused.
//
// --python names the interpreter by path, or by a name looked up on PATH
// (the default, python3). The interpreter and --workdir, which must be a
// writable directory, are checked before anything starts: one that
// cannot be used is refused with exit status 2 and a message that names
// the flag, on stderr and, on stdin/stdout, in an error frame.
package main
