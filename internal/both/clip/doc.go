// Package clip bounds text that came from a sandbox or a tool before it is
// quoted in an error or a log line: a string over the limit is cut at a
// UTF-8 character boundary and marked with an ellipsis.
package clip
