// Package docker is a [transport.Backend] that runs each session in a
// fresh container of a Docker Engine API: Docker, or podman's system
// service. It talks to the engine with the official Go client
// (github.com/moby/moby/client) and finds it as the docker CLI does:
// DOCKER_HOST, else the CLI's context (DOCKER_CONTEXT, else the
// currentContext of its config file), else the default socket
// ([Config.Host], [Backend.HostSource]).
//
// The session runs over the container's attached standard input and
// output, demultiplexed with the client's stdcopy: no port is published and
// nothing listens anywhere. The tools package arrives over the same stream
// in the files preamble of package internal/protocol/wsproto, the tar message the
// remote backend sends over its WebSocket, and the server
// (codemode-sandbox --files-over-stdin) validates it and writes it read-only
// to /tools.
//
// Each container runs without a network (NetworkMode none), with a
// read-only root, all capabilities dropped, no-new-privileges, the jail's
// system-call policy (internal/both/syscallpolicy) as a seccomp profile of the
// backend's own rather than the engine's default (inline for Docker; for
// podman, which takes a file, written to the temporary directory, so podman
// must be reached through its unix socket), an init process, a private IPC
// namespace, as an unprivileged user, with limits on pids (256), memory
// (1 GiB, swap equal) and optionally CPU, tmpfs mounts at /workspace
// (1 GiB), /tmp (256 MiB) and /tools (64 MiB), and auto-remove. Each limit
// is settable in [Config]; after creating a container the backend reads
// back what the engine applied (container inspect) and refuses a session
// whose container did not get what was asked ([Backend.Enforced] reports
// it). Closing a session removes its container.
//
// With [Config.Egress] code reaches the hosts a policy allows, and nothing
// else, through a proxy (package egress) on this host, one per session: it
// listens on a Unix socket in a private temporary directory that the
// container mounts read-only at /run/codemode-egress, and the sandbox
// server in the container relays the code's connections to 127.0.0.1:3128
// to it (codemode-sandbox --egress-socket). The network mode stays none.
//
// Every container carries the labels io.codemode.sandbox and
// io.codemode.owner (host, pid and start time of the host process); the
// first Open of a process removes the containers whose owner on this host
// has died ([Backend.RemoveOrphans]).
package docker
