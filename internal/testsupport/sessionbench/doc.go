// Package sessionbench holds what the benchmarks of every backend share: a
// warm print(1) block, a no-op tool call from Python, a session's start
// against a bare spawn of the same interpreter in the same loop, and the
// median and units they report. Each backend's benchmarks call them, so
// that the figures in docs/benchmarks.md measure the same thing.
package sessionbench
