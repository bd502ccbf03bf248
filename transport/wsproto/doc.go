// Package wsproto carries the frame protocol of package transport/wire over
// a WebSocket (gorilla/websocket), for sandboxes that run on another
// machine: what the client (package backend/remote) and the server
// (package sandboxserver/wsserve) must agree on, and nothing else.
//
// # Session start
//
// The client opens a WebSocket at the server's "/" with the subprotocol
// [Subprotocol] and an Authorization header carrying a bearer token (see
// Tokens). Its first message is a binary one: the session's files (the
// generated tools package) as a tar archive, sent even when empty
// ([Stream.SendFiles], [Stream.ReadFiles], [EncodeFiles], [DecodeFiles]).
// The server writes them where sys.path finds them and starts the worker;
// from then on every message is a text message holding one or more whole
// frame lines, and the server's first frame is ready, as on any stream.
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
// not even a pong, for [Options.IdleTimeout] ends; both sides ping every
// [Options.PingInterval]. A breach closes the connection with a close
// frame whose reason names the limit, which the peer's read returns as a
// *websocket.CloseError.
//
// # Concurrency
//
// A [Stream] supports one reader and one writer at a time, which is what
// wire.Conn does with it: one goroutine reads, and writes are serialised by
// the Conn. Close and CloseWith may be called from any goroutine.
package wsproto
