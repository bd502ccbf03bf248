// Package transport defines how the host talks to a sandbox: the frame
// protocol spoken over one byte stream, and the Backend and Session contract
// that every sandbox implementation satisfies.
//
// # Frames
//
// A frame is one JSON object on one line, terminated by "\n". Every frame has
// a "kind" key naming its type. Decoding is strict, because frames written by
// the sandbox are hostile input:
//
//   - keys are matched exactly (case-sensitive); a key that the kind does not
//     define is an error, as is a missing required key;
//   - a line longer than the reader's limit is an error, never a large
//     allocation (see [MaxFrameSize]);
//   - an unknown kind is an error.
//
// The sandbox announces itself with a ready frame carrying [ProtocolVersion].
// A host that reads a different version fails with a [*VersionError].
//
// A block runs as: the host sends run; the sandbox sends any number of
// tool_call (answered by tool_result), cancel and log frames; then done, then
// output. Files the block created or changed are listed in output and can be
// fetched with get_file. shutdown ends the session.
//
// # Sessions
//
// A [Backend] opens [Session]s. One session is one sandbox with one
// persistent Python worker: variables and files survive from one
// [Session.Exec] to the next until [Session.Close]. Tool calls made by the
// code arrive at the [ToolHandler] given in [SessionConfig], concurrently.
//
// [NewClient] turns any frame stream into a Session, so a backend only has to
// start a sandbox server and hand over its stream; the jail, the unsandboxed
// development backend and the remote backends all do this.
//
// # Concurrency
//
// A Session's Exec calls are serialised by the session itself; Close may be
// called at any time from any goroutine and unblocks a running Exec.
// A [Conn] supports one concurrent reader and any number of writers.
package transport
