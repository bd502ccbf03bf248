// Package wsproto carries the frame protocol of package internal/protocol/wire over
// a WebSocket (gorilla/websocket), for sandboxes that run on another
// machine: what the client (package backend/remote) and the server
// (package internal/sandbox/wsserve) must agree on, and nothing else.
//
// # Session start
//
// The client opens a WebSocket at the server's "/" with the subprotocol
// [Subprotocol] and an Authorization header carrying a bearer token (see
// Tokens). Its first message is a binary one: the session's files (the
// generated tools package) as a tar archive, sent even when empty
// ([Stream.SendFiles], [Stream.ReadFiles], [EncodeFiles], [DecodeFiles]).
// The server writes them where sys.path finds them and starts the worker;
// from then on every message is a binary message of a [Resumable]: the
// server's session message (the session id and a resume key), acks, and
// numbered data messages holding whole frame lines. The server's first
// frame is ready, as on any stream.
//
// # Resumes
//
// A connection lost without a close frame does not end the session: each
// side keeps what the other has not acknowledged, the client dials again
// with a resume credential in the [ResumeHeader] (a MAC by the session's
// resume key over the session id and an attempt number, each attempt
// number accepted once), the server attaches the new connection
// ([Resumable.CheckResume], [Resumable.Attach]), and both resend what the
// other lacks, so that every data message arrives exactly once. Past
// [Options.ResumeWindow] the session fails with [ErrNotResumed].
//
// # Tokens
//
// The server holds a secret. A client that holds it too signs a fresh
// token for every connection ([Sign]): an HMAC-SHA256, keyed by the
// secret, over a random session id and an expiry time. The secret never
// crosses the wire, a token is refused once its expiry has passed (with a
// bounded allowance for clock skew), and a server accepts each session id
// once ([Verifier]). For compatibility with the upstream project the
// server also accepts the secret itself as the bearer token, compared in
// constant time; that secret then travels with every connection.
//
// # Limits
//
// Every message is bounded ([Options.MaxMessageBytes]), the files message
// by its own limits ([FileLimits]); a connection that receives nothing,
// not even a pong, for [Options.IdleTimeout] is given up as lost; both
// sides ping every [Options.PingInterval]; what a side keeps
// unacknowledged is bounded ([Options.MaxUnackedBytes]). A breach closes
// the connection with a close frame whose reason names the limit, which
// the peer's read returns as a *websocket.CloseError, and ends the
// session.
//
// # Concurrency
//
// A [Resumable] supports one reader and one writer at a time, which is
// what wire.Conn does with it: one goroutine reads, and writes are
// serialised by the Conn. Close may be called from any goroutine. The
// reader reads the connection itself when nothing is queued, so a message
// reaches it without passing between goroutines; a helper reads only
// while the peer's greeting is due or a writer waits for
// acknowledgements and no read is under way. Acknowledgements, pings and
// a lost connection are therefore noticed while a read is pending, as a
// frame reader keeps one.
package wsproto
