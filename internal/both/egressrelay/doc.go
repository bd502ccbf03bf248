// Package egressrelay relays the code's connections to the egress proxy
// from inside a sandbox to the host: it takes each connection on a
// listening socket on the sandbox's loopback (127.0.0.1:3128, which the
// code's proxy variables name), opens the way to the host's proxy for it,
// and copies bytes both ways until both are done. At most a bounded
// number of connections are relayed at once; one past the bound waits a
// little for a slot, then is closed.
//
// The way to the host is the caller's: the jail's supervisor passes the
// host one end of a socket pair over its connector; codemode-sandbox in
// a container connects to a Unix socket the host bind-mounted into it.
//
// Like internal/sandbox/supervisor, which imports it, the package uses system
// calls only (no net, os/exec or path/filepath), so that a program that
// re-executes itself as the supervisor initializes it early.
package egressrelay
