// Package wsserve serves one sandbox session over a WebSocket, for a
// sandbox that runs on another machine than its host: a container per
// turn on Cloud Run, a Kubernetes pod, any host without user namespaces.
// cmd/codemode-sandbox runs it under --listen; package backend/remote is
// its client. The protocol is package internal/protocol/wsproto's.
//
// # Requests
//
// GET /health answers 200 at any time, also while a session runs. "/"
// upgrades to a WebSocket after three checks, in this order:
//
//   - the bearer token must verify against the secret (wsproto.Verifier):
//     a wrong, expired or replayed token gets 401 and starts nothing;
//   - the client must ask for the subprotocol wsproto.Subprotocol (400);
//   - no session may have started in this process: a second connection
//     gets 409, whatever the state of the first, unless it resumes the
//     session: its wsproto.ResumeHeader credential must be good for the
//     running session (401 if not, 409 if the session is another or has
//     ended), and it then replaces the session's connection.
//
// With no secret the server refuses to start unless InsecureNoAuth is set.
// The response that accepts a session's first connection carries, when
// Config.Egress is set, the wsproto.EgressHeader: the allowlist the
// session's code is held to.
//
// # The session
//
// The first message is the session's files, which are written read-only
// under Session.FilesDir, the directory put first on sys.path; then the
// worker starts and internal/both/server's Serve runs the session over the
// connection, which the host may resume after a drop within the resume
// window (Stream.ResumeWindow). [Serve] returns when the session ends, for
// whatever reason: the host's shutdown, a connection lost and not resumed,
// or a limit. By then every process
// the session started has been killed, so the program can exit: one
// process, one session.
//
// # Limits
//
// The HTTP request and the files message must arrive within
// HandshakeTimeout; each message is bounded, and the files message by its
// own limits; a connection idle past Stream.IdleTimeout ends. A breach closes
// the connection with a close frame whose reason names the limit.
package wsserve
