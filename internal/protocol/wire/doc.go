// Package wire is how the host and a sandbox server talk: the frame
// protocol over one byte stream, a connection that reads and writes frames,
// the client that turns a connection into a transport.Session, and the
// runner of the tool calls that arrive over it.
//
// # Frames
//
// A frame is one JSON object on one line, terminated by "\n". Every frame has
// a "kind" key naming its type. A frame's keys are declared once, by the
// json tags of its struct: a key tagged omitempty is optional, every other
// key is required. Decoding is strict, because frames written by the
// sandbox are hostile input:
//
//   - keys are matched exactly (case-sensitive); a key that the kind does not
//     define is an error, as is a missing required key;
//   - a line longer than the reader's limit is an error, never a large
//     allocation (see [MaxFrameSize]);
//   - an unknown kind is an error.
//
// The sandbox announces itself with a ready frame carrying [ProtocolVersion].
// A host that reads a different version fails with a [*transport.VersionError].
//
// A block runs as: the host sends run; the sandbox sends any number of
// tool_call (answered by tool_result), cancel and log frames; then done, then
// output. Files the block created or changed are listed in output and can be
// fetched with get_file. shutdown ends the session.
//
// # Clients
//
// [NewClient] turns any frame stream into a session, so a backend only has
// to start a sandbox server and hand over its stream. [NewConnPipe] joins a
// client and a server in one process without encoding frames at all.
//
// # Concurrency
//
// A [Conn] supports one concurrent reader and any number of writers.
// [Calls] runs tool calls concurrently, within the session's bound.
package wire
