package supervisor

import _ "embed"

// runnerSource is the Python side of the worker. It is passed to the
// interpreter with -c, so nothing needs to be installed in the sandbox.
//
//go:embed runner/runner.py
var runnerSource string

// RunnerSource returns the source of the Python worker.
func RunnerSource() string { return runnerSource }
