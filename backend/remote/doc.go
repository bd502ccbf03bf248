// Package remote is a backend whose sandboxes run elsewhere: each session
// is a WebSocket to a sandbox server (cmd/codemode-sandbox --listen,
// package internal/sandbox/wsserve) on another machine, in a container or a
// pod that lives for one session. The protocol is package
// internal/protocol/wsproto's; this package is its client.
//
// # Connecting
//
// [Backend.Open] connects to [Config.URL] (http and https are rewritten to
// ws and wss; an address without a scheme gets wss), or to the URL that
// [Config.Provision] returns for this session, and sends the session's
// files. It authenticates with a token signed for this connection from
// [Config.Secret] (the secret itself never crosses the wire), or with what
// [Config.Token] returns. The connection goes through the proxy that the
// environment names (HTTPS_PROXY, NO_PROXY, ...), and wss uses the system's
// root certificates unless [Config.TLS] says otherwise.
//
// A start that fails for a reason that may pass (a refused or reset
// connection, a timeout, a busy or unavailable server) is tried again, up
// to [Config.StartAttempts] times in all, after a linear backoff with
// jitter; a refused token or a bad URL is not. Each attempt provisions
// its own sandbox and releases it if the attempt fails.
//
// # Sessions
//
// A session is a wire.Client over the WebSocket: it behaves as every
// backend's does (package transport/transporttest holds them to one
// suite), and a lost connection is a *transport.ConnectionError whose
// Stage says whether the block may have run.
//
// # Egress
//
// A server started with --jail --egress holds its sessions' code to an
// egress allowlist, enforced by a proxy in the server's own process, and
// reports the list in its handshake response (wsproto.EgressHeader).
// [Config.Egress] declares the list the host expects: a session whose
// server reports another, or none, is refused with an
// [*EgressMismatchError] that names both, and [Backend.DescribeNetwork]
// names the declared hosts to the model, which the check makes true.
//
// # Lost connections
//
// When the WebSocket breaks, the session does not: the backend dials the
// same sandbox again (the same URL, also a provisioned one) at once and
// then with the start's backoff, presenting the session's resume
// credential, for up to [Config.ResumeWindow] (30s). Meanwhile the sandbox
// keeps the session and its worker; the block runs on, and what either
// side sent and the other did not acknowledge is sent again, once. A
// block, a tool call and its result are neither lost nor repeated. Past
// the window the session ends as if the connection had simply gone: the
// block that ran is classified not run, ran or unknown, and the sandbox
// exits.
package remote
