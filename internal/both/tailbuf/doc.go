// Package tailbuf keeps the end of a stream: backends use it to hold the
// last lines a sandbox server wrote to its standard error, to show them
// when the sandbox fails to start.
package tailbuf
